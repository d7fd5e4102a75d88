import { createServer, type Server, type ServerOptions } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from './base/clock.ts';
import type { Config } from './app/config.ts';
import { demoAtStart, demoBanner, type DemoAtStart } from './demo/demo-start.ts';
import { frontDoor } from './front-door/front-door.ts';
import { createHttpEdge } from './http/edge.ts';
import { ConnectionGate } from './http/connection-gate.ts';
import type { Logger } from './base/log.ts';
import type { AppServices } from './app/services.ts';
import { schedulePruning } from './app/retention-schedule.ts';
import { createServices } from './app/services.ts';
import { WebhookDispatcher } from './webhooks/dispatcher.ts';
import { watchErasures } from './erasure/watch.ts';
import { WebhookSender } from './webhooks/send.ts';
import { migrateDatabase } from './store/migrate-database.ts';
import { openStore } from './store/open-store.ts';
import { createMcpEdge } from './mcp/edge.ts';
import { createOAuthEdge, type OAuthEdge } from './oauth/edge.ts';
import { reportToPrimary } from './metrics/cluster.ts';
import { listenForScrapes, type MetricsListener } from './metrics/listener.ts';
import { Metrics } from './metrics/metrics.ts';
import { countingAttempts } from './metrics/webhook-attempts.ts';
import { serviceVersion } from './contract/version.ts';
import { tracingSettings } from './tracing/settings.ts';
import { startTracing, type RunningTracing } from './tracing/start.ts';

const SHUTDOWN_GRACE_MS = 10_000;

export interface RunningServer {
  url: string;
  services: AppServices;
  webhooks: WebhookDispatcher;
  server: Server;
  connections: ConnectionGate;
  /** Where this process serves its metrics (`…/metrics`), when METRICS_PORT is set and it listens for them itself. */
  metricsUrl?: string;
  close(): Promise<void>;
}

export interface StartOptions {
  seedDemo?: boolean;
  clock?: Clock;
  /**
   * `listen` (the default): this process serves its metrics on METRICS_PORT. `primary`: a worker of
   * `serve --workers`, whose primary serves them for all (reportToPrimary, workersExposition).
   */
  metrics?: 'listen' | 'primary';
}

/** Opens the database, migrates it, optionally seeds the demo, and listens. */
export async function startServer(config: Config, log: Logger, options: StartOptions = {}): Promise<RunningServer> {
  await migrateDatabase(config.databaseUrl, log);
  // Before the store opens: traced, its calls are spans (openStore). Only the standard OTEL_* variables say.
  const traceSettings = tracingSettings(process.env);
  const tracing: RunningTracing | undefined = traceSettings ? await startTracing(traceSettings, serviceVersion().version) : undefined;
  if (traceSettings)
    log.info({ exporter: traceSettings.exporter, protocol: traceSettings.protocol, sampler: traceSettings.sampler.name }, 'tracing on');
  const store = openStore(config.databaseUrl, { checkpointInBackground: true, readUrls: config.databaseReadUrls });
  // Counted only when someone may scrape them: with METRICS_PORT unset, no request pays for a count.
  const metrics = config.metricsPort === undefined ? undefined : new Metrics();
  let services: AppServices, demo: DemoAtStart | undefined, server: Server, connections: ConnectionGate;
  let scrapes: MetricsListener | undefined;
  let listening: Server | undefined;
  let oauth: OAuthEdge | undefined;
  try {
    services = await createServices(store, config, options.clock, metrics);
    demo = options.seedDemo ? await demoAtStart(store, services.clock, config.databaseUrl) : undefined;
    // MCP at /mcp, OAuth for assistants (its metadata, /authorize, /token…), the HTTP API and its site for everything else.
    oauth = createOAuthEdge(services, log, { registrationAllowedOrigins: config.oauthRegistrationAllowedOrigins });
    const edges = [
      createMcpEdge(services, log, { allowedOrigins: config.mcpAllowedOrigins }),
      oauth,
      createHttpEdge(services, log, { corsAllowedOrigins: config.corsAllowedOrigins }),
    ];
    const s = createServer(httpServerOptions(config), frontDoor(log, { trustProxyHops: config.trustProxyHops, metrics }, edges));
    // A client that stops reading its answer holds the answer's buffers: nothing moving for this long closes it.
    s.timeout = config.socketTimeoutMs;
    // Behind proxies every connection is theirs: a per-address cap would be a cap on the proxy.
    connections = new ConnectionGate(s, {
      maxConnections: config.maxConnections,
      maxPerAddress: config.trustProxyHops > 0 ? 0 : config.maxConnectionsPerAddress,
    });
    server = await new Promise<Server>((resolve, reject) => {
      s.once('error', reject);
      s.listen(config.port, config.host, () => resolve(s));
    });
    listening = server;
    services.publicOrigin = publicOrigin(config, server, log);
    if (metrics) {
      const held = services.heldReads;
      const clock = services.clock;
      metrics.observe({
        heldReads: (kind) => held.heldOf(kind),
        pool: () => store.poolUse(),
        webhookBacklog: (cap) => store.webhookBacklog(cap),
        now: () => clock.now().getTime(),
      });
      if (options.metrics === 'primary') reportToPrimary(metrics.registry);
      else scrapes = await listenForScrapes(config.metricsHost, config.metricsPort!, metrics, log);
    }
  } catch (err) {
    // Do not leave a pool open behind a failed start: the process would linger.
    listening?.close();
    await oauth?.close();
    await store.close();
    await tracing?.stop();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  log.info({ url }, 'event-feed listening');

  if (demo) process.stdout.write(demoBanner(url, demo));

  const pruning = schedulePruning(services, config, log);
  const webhooks = new WebhookDispatcher(
    metrics ? countingAttempts(store, metrics) : store,
    new WebhookSender(services.webhookPolicy!, config.webhookTimeoutMs),
    services.clock,
    log,
    {
      intervalMs: config.webhookDispatchIntervalMs,
      leaseMs: Math.max(60_000, config.webhookTimeoutMs * 3),
      slots: config.webhookSlots,
      slotsPerWorkspace: config.webhookSlotsPerWorkspace,
      leaseBudgetMs: config.webhookLeaseBudgetMs,
      deliveriesPerLease: 100,
    },
  );
  webhooks.start();
  // Erasures resume where a restart left them (ErasureRunner); other instances' batches reach this one's caches.
  services.erasures.runner.start(log);
  services.erasures.rewrites.listen((workspaceId) => webhooks.rewrote(workspaceId));
  const erasureWatch = watchErasures(store, (workspaceId) => services.erasures.rewrites.tell(workspaceId), { log });
  // Where a change channel exists (Postgres), every instance hears each commit and key change.
  const changes = store.listenForChanges?.(services.changes, log);
  // Replicas serve catch-up pages once a probe shows them up (Store.replicas).
  const replicas = store.replicas?.watch(log);

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      // /readyz answers 503 from now on: a balancer stops sending while what is in flight finishes.
      services.lifecycle.draining = true;
      // Held reads (long-polls, streams) are answered now rather than cut at the grace's end.
      services.heldReads.close();
      // Stop accepting, let in-flight requests finish, then release the database. A keep-alive
      // connection that goes idle after close() would otherwise linger until its timeout: close
      // idle ones as they appear, and give in-flight requests at most SHUTDOWN_GRACE_MS.
      await new Promise<void>((done) => {
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        const deadline = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
        server.close(() => {
          clearInterval(sweep);
          clearTimeout(deadline);
          done();
        });
        server.closeIdleConnections();
      });
      await pruning.stop();
      await webhooks.stop();
      erasureWatch.stop();
      await services.erasures.runner.stop();
      await changes?.stop();
      await replicas?.stop();
      await scrapes?.close();
      await oauth?.close();
      await store.close();
      // Last: the spans of everything above are exported before the process ends.
      await tracing?.stop();
    })());
  return { url, server, connections, services, webhooks, close, ...(scrapes ? { metricsUrl: scrapes.url } : {}) };
}

/**
 * The origin clients reach the service at: PUBLIC_URL, or else this process's own address, with a
 * loopback name when it listens on every interface (then clients on other machines need
 * PUBLIC_URL: the OAuth metadata must name an address they reach, over https).
 */
function publicOrigin(config: Config, server: Server, log: Logger): string {
  if (config.publicUrl) return config.publicUrl;
  const { port, family } = server.address() as AddressInfo;
  if (!['127.0.0.1', '::1', 'localhost'].includes(config.host)) {
    log.warn(
      { host: config.host },
      'PUBLIC_URL is not set: the OAuth metadata names a loopback address, which assistants on other machines cannot use; set PUBLIC_URL to the https origin they reach',
    );
  }
  return `http://${family === 'IPv6' && config.host !== '::' ? 'localhost' : '127.0.0.1'}:${port}`;
}

/**
 * Node's own bounds on a connection. A connection that has not sent complete headers within
 * headersTimeout (one that sent nothing at all included: verified on Node 20 by the test 'a socket
 * that never sends a byte is closed after the header timeout') gets 408 and is closed, checked every
 * second rather than Node's default 30 s; its whole request within requestTimeout; an idle
 * keep-alive connection is closed after keepAliveTimeout.
 */
function httpServerOptions(config: Config): ServerOptions {
  return {
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, config.headersTimeoutMs),
  };
}
