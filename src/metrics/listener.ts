import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../base/log.ts';
import { safeErrorFields } from '../base/log.ts';

/** What a scrape answers: the exposition text and its content type. */
export interface Exposition {
  text(): Promise<string>;
  contentType: string;
}

export interface MetricsListener {
  /** Where Prometheus scrapes: `http://host:port/metrics`. */
  url: string;
  close(): Promise<void>;
}

/**
 * `GET /metrics` on a port of its own (METRICS_PORT), never on the API's: the metrics need no key
 * and tell the traffic's shape, so they are reachable only where the operator binds them (loopback
 * by default: a scraper on the host or a sidecar), and the API's limits, connection gate and logs
 * never see a scrape. Anything else here is a 404.
 */
export async function listenForScrapes(host: string, port: number, exposition: Exposition, log: Logger): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('metrics are at GET /metrics\n');
      return;
    }
    exposition.text().then(
      (text) =>
        void res
          .writeHead(200, { 'Content-Type': exposition.contentType, 'Cache-Control': 'no-store' })
          .end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) => {
        log.error(safeErrorFields(err), 'metrics: a scrape failed');
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('metrics could not be collected; see the log\n');
      },
    );
  });
  // Scrapers keep their connection between scrapes; nothing here is slow enough to need the API's bounds.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`;
  log.info({ url }, 'metrics listening');
  return { url, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
