import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP reverse proxy on 127.0.0.1 that adds `Authorization: Bearer <key>` to every request and
 * forwards it to `target` otherwise unchanged (its Host header and Origin included, as a reverse
 * proxy in front of a deployment does): for outside clients that send no credentials (the MCP
 * conformance suite).
 */
export interface BearerProxy {
  url: string;
  close(): Promise<void>;
}

export async function startBearerProxy(target: string, key: string): Promise<BearerProxy> {
  const to = new URL(target);
  const server: Server = createServer((req, res) => {
    const upstream = request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, authorization: `Bearer ${key}` } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
