import { MIN_RETENTION_DAYS } from '../feed/expiry.ts';
import { availableParallelism } from 'node:os';
import { WORKSPACE_SHARE } from '../limits/rate-limiter.ts';
import { normalizedOrigin } from '../net/origins.ts';
import { servesReadReplicas } from '../store/open-store.ts';

/** Everything the service reads from its environment, checked once at start. */
export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  /** Streaming replicas of a Postgres DATABASE_URL that may serve catch-up pages (DATABASE_READ_URLS, comma-separated). */
  databaseReadUrls: string[];
  /** Cursor HMAC secret; when absent, one is generated once and shared through the database. */
  cursorSecret: string | undefined;
  logLevel: string;
  /** Events are kept at least this long (the contract promises 30 days). */
  retentionDays: number;
  pruneIntervalSeconds: number;
  pruneBatchSize: number;
  /** Token bucket per API key; 0 disables rate limiting (by key and by address). */
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /** Token bucket per workspace, shared by all its keys (by default WORKSPACE_SHARE keys' worth). */
  rateLimitWorkspacePerSecond: number;
  rateLimitWorkspaceBurst: number;
  /** Token bucket per client address, for what no key pays for (failed authentication, unauthenticated pages). */
  rateLimitPerAddressPerSecond: number;
  rateLimitPerAddressBurst: number;
  /** A response costs one more token per this many bytes past the first this many. */
  rateLimitBytesPerToken: number;
  /** How many proxies in front of the service append to X-Forwarded-For; 0: the socket's peer is the client. */
  trustProxyHops: number;
  /**
   * Connections held at once, in all and per client address (0: no per-address cap; by default
   * half of all, so one address never holds every slot, while a client with a large pool is not
   * turned away).
   */
  maxConnections: number;
  maxConnectionsPerAddress: number;
  /**
   * Reads held open at once (long-polls of `Prefer: wait` and event streams), in all, per key and
   * per workspace: a held read is a busy connection the gate cannot evict, so by default half of
   * MAX_CONNECTIONS stay for everything else, and one workspace (all its keys together) may hold a
   * quarter of the held ones, as may one key.
   */
  heldReadsMax: number;
  heldReadsPerKey: number;
  heldReadsPerWorkspace: number;
  /** An event stream whose client takes nothing of what was written for this long is closed. */
  streamStallMs: number;
  /** A connection must send complete request headers within this (also closes one that sends nothing). */
  headersTimeoutMs: number;
  /** ... and its whole request (headers and body) within this. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** A connection on which nothing moves for this long (a client that stops reading its answer) is closed. */
  socketTimeoutMs: number;
  /** Lets webhooks go to plain http and private or loopback addresses: development and tests only. */
  webhooksAllowInsecure: boolean;
  webhookTimeoutMs: number;
  webhookDispatchIntervalMs: number;
  /** erase_person: how many seqs one batch of an erasure looks at, and the pause between batches (ErasureRunner). */
  erasureBatchSeqs: number;
  erasurePauseMs: number;
  /** How long an erasure's lease lasts unrenewed: another instance takes over one a dead instance left after this. */
  erasureLeaseMs: number;
  /** Memory the answers in flight may hold (pages of events), in MiB: past it, requests wait, then get 429. */
  memoryBudgetMb: number;
  /** Pages that can no longer change kept in memory for the next reader (SealedPages), in MiB; 0: none. */
  pageCacheMb: number;
  /** Endpoints one instance sends to at once, each in a slot of its own. */
  webhookSlots: number;
  /** The most of those slots one workspace's endpoints may hold, so that others find one free. */
  webhookSlotsPerWorkspace: number;
  /** How long one endpoint may keep its slot starting new attempts before it gives the slot back. */
  webhookLeaseBudgetMs: number;
  /** redeliver_webhook refuses to queue more for an endpoint that has this many pending deliveries. */
  webhookRedeliverMaxPending: number;
  /** Processes `serve` runs on the port (WORKERS: a number or `auto`, one per core); 1: this process alone. */
  workers: number;
  /** Where Prometheus scrapes `/metrics` (METRICS_PORT; 0: any free port); undefined: no metrics. */
  metricsPort: number | undefined;
  /** The metrics' address: loopback unless set (they need no key and tell the traffic's shape). */
  metricsHost: string;
  /** Browser origins allowed to call /mcp besides the deployment's own (MCP_ALLOWED_ORIGINS, comma-separated; OriginPolicy). */
  mcpAllowedOrigins: string[];
  /** Origins whose pages may read the event stream of GET /v1/event_feed/stream (CORS_ALLOWED_ORIGINS; none by default). */
  corsAllowedOrigins: string[];
  /** Origins whose pages may register an OAuth client at /register (OAUTH_REGISTRATION_ALLOWED_ORIGINS; none by default: no CORS header). */
  oauthRegistrationAllowedOrigins: string[];
  /**
   * The origin clients reach the service at (PUBLIC_URL, e.g. `https://feed.example.com`): what the
   * OAuth metadata advertises as the issuer and the MCP resource (`<origin>/mcp`). Behind a proxy it
   * is the proxy's public origin. Unset: `http://127.0.0.1:<port>` (development on one machine).
   */
  publicUrl: string | undefined;
}

export { MIN_RETENTION_DAYS };

export const DEFAULT_DATABASE_URL = 'sqlite:data/event-feed.sqlite';

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`PORT must be an integer between 0 and 65535 (got "${env.PORT}")`);
  }
  const secret = env.EVENT_FEED_SECRET || undefined;
  if (secret !== undefined && secret.length < 32) {
    // Never echo the value itself: it is a secret even when it is a bad one.
    throw new ConfigError('EVENT_FEED_SECRET must be at least 32 characters long');
  }
  const retentionDays = number(env, 'RETENTION_DAYS', 30);
  if (retentionDays < MIN_RETENTION_DAYS) {
    throw new ConfigError(
      `RETENTION_DAYS must be at least ${MIN_RETENTION_DAYS}: the feed promises clients ${MIN_RETENTION_DAYS} days of events (got ${retentionDays})`,
    );
  }
  const rateLimitPerSecond = number(env, 'RATE_LIMIT_PER_SECOND', 100);
  const rateLimitBurst = positive(env, 'RATE_LIMIT_BURST', Math.max(1, Math.ceil(rateLimitPerSecond * 2)));
  const rateLimitPerAddressPerSecond = positive(env, 'RATE_LIMIT_PER_ADDRESS_PER_SECOND', 20);
  const headersTimeoutMs = integer(env, 'HEADERS_TIMEOUT_MS', 10_000, 1);
  const requestTimeoutMs = integer(env, 'REQUEST_TIMEOUT_MS', Math.max(20_000, headersTimeoutMs), 1);
  if (requestTimeoutMs < headersTimeoutMs) throw new ConfigError('REQUEST_TIMEOUT_MS must be at least HEADERS_TIMEOUT_MS');
  const maxConnections = integer(env, 'MAX_CONNECTIONS', 4096, 1);
  const heldReadsMax = integer(env, 'HELD_READS_MAX', Math.max(1, Math.floor(maxConnections / 2)), 1);
  return {
    retentionDays,
    // 0: the server never prunes on its own (one `event-feed prune` from cron serves every instance).
    pruneIntervalSeconds: number(env, 'PRUNE_INTERVAL_SECONDS', 3600),
    pruneBatchSize: positive(env, 'PRUNE_BATCH_SIZE', 1000),
    rateLimitPerSecond,
    webhooksAllowInsecure: env.WEBHOOKS_ALLOW_INSECURE === '1',
    webhookTimeoutMs: positive(env, 'WEBHOOK_TIMEOUT_MS', 10_000),
    webhookDispatchIntervalMs: positive(env, 'WEBHOOK_DISPATCH_INTERVAL_MS', 500),
    erasureBatchSeqs: positive(env, 'ERASURE_BATCH_SEQS', 5000),
    erasurePauseMs: number(env, 'ERASURE_PAUSE_MS', 0),
    erasureLeaseMs: positive(env, 'ERASURE_LEASE_MS', 30_000),
    memoryBudgetMb: memoryBudget(env),
    pageCacheMb: number(env, 'PAGE_CACHE_MB', 16),
    webhookSlots: integer(env, 'WEBHOOK_SLOTS', 16, 1),
    webhookSlotsPerWorkspace: integer(env, 'WEBHOOK_SLOTS_PER_WORKSPACE', 8, 1),
    webhookLeaseBudgetMs: positive(env, 'WEBHOOK_LEASE_BUDGET_MS', 2000),
    webhookRedeliverMaxPending: integer(env, 'WEBHOOK_REDELIVER_MAX_PENDING', 10_000, 1),
    rateLimitBurst,
    rateLimitWorkspacePerSecond: positive(
      env,
      'RATE_LIMIT_WORKSPACE_PER_SECOND',
      rateLimitPerSecond > 0 ? rateLimitPerSecond * WORKSPACE_SHARE : 1,
    ),
    rateLimitWorkspaceBurst: positive(env, 'RATE_LIMIT_WORKSPACE_BURST', rateLimitBurst * WORKSPACE_SHARE),
    rateLimitPerAddressPerSecond,
    rateLimitPerAddressBurst: positive(env, 'RATE_LIMIT_PER_ADDRESS_BURST', Math.max(1, Math.ceil(rateLimitPerAddressPerSecond * 2))),
    rateLimitBytesPerToken: integer(env, 'RATE_LIMIT_BYTES_PER_TOKEN', 64 * 1024, 1024),
    trustProxyHops: integer(env, 'TRUST_PROXY_HOPS', 0, 0),
    maxConnections,
    maxConnectionsPerAddress: integer(env, 'MAX_CONNECTIONS_PER_ADDRESS', Math.max(1, Math.floor(maxConnections / 2)), 0),
    heldReadsMax,
    streamStallMs: integer(env, 'STREAM_STALL_MS', 30_000, 1),
    heldReadsPerKey: integer(env, 'HELD_READS_PER_KEY', Math.max(1, Math.floor(heldReadsMax / 4)), 1),
    heldReadsPerWorkspace: integer(env, 'HELD_READS_PER_WORKSPACE', Math.max(1, Math.floor(heldReadsMax / 4)), 1),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 1),
    socketTimeoutMs: integer(env, 'SOCKET_TIMEOUT_MS', 30_000, 1),
    host: env.HOST || '127.0.0.1',
    port,
    databaseUrl: env.DATABASE_URL || DEFAULT_DATABASE_URL,
    databaseReadUrls: readUrls(env),
    cursorSecret: secret,
    logLevel: env.LOG_LEVEL || 'info',
    workers: env.WORKERS ? parseWorkerCount(env.WORKERS, 'WORKERS') : 1,
    metricsPort: metricsPort(env, port),
    metricsHost: env.METRICS_HOST || '127.0.0.1',
    mcpAllowedOrigins: allowedOrigins(env, 'MCP_ALLOWED_ORIGINS'),
    corsAllowedOrigins: allowedOrigins(env, 'CORS_ALLOWED_ORIGINS'),
    oauthRegistrationAllowedOrigins: allowedOrigins(env, 'OAUTH_REGISTRATION_ALLOWED_ORIGINS'),
    publicUrl: publicUrl(env),
  };
}

/** MCP_ALLOWED_ORIGINS, CORS_ALLOWED_ORIGINS, OAUTH_REGISTRATION_ALLOWED_ORIGINS: origins as browsers send them (`https://app.example.com`, `http://localhost:6274`), comma-separated. */
function allowedOrigins(
  env: NodeJS.ProcessEnv,
  name: 'MCP_ALLOWED_ORIGINS' | 'CORS_ALLOWED_ORIGINS' | 'OAUTH_REGISTRATION_ALLOWED_ORIGINS',
): string[] {
  const entries = (env[name] ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  return entries.map((entry, i) => {
    const origin = normalizedOrigin(entry);
    if (origin === undefined)
      throw new ConfigError(
        `${name}: entry ${i + 1} ("${entry.slice(0, 60)}") is not an http(s) origin such as https://app.example.com (scheme, host and port only)`,
      );
    return origin;
  });
}

/**
 * PUBLIC_URL: an origin only (scheme, host, port), since the OAuth endpoints and `/mcp` sit at the
 * root of it, and https unless the host is loopback (an OAuth issuer must be https: RFC 8414; the
 * MCP SDK's router refuses anything else), returned without a trailing slash.
 */
function publicUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.PUBLIC_URL;
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`PUBLIC_URL must be an absolute URL such as https://feed.example.com (got "${raw.slice(0, 80)}")`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && ['localhost', '127.0.0.1'].includes(url.hostname))) {
    throw new ConfigError('PUBLIC_URL must use https (http only for localhost or 127.0.0.1): it is the OAuth issuer assistants check');
  }
  if (url.username || url.password || url.search || url.hash || url.pathname !== '/') {
    throw new ConfigError(
      'PUBLIC_URL must be an origin only (scheme, host and port: no path, query, fragment or credentials), e.g. https://feed.example.com',
    );
  }
  return url.origin;
}

/** DATABASE_READ_URLS: Postgres URLs, comma-separated (never echoed: they may hold passwords). */
function readUrls(env: NodeJS.ProcessEnv): string[] {
  const urls = (env.DATABASE_READ_URLS ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  urls.forEach((url, i) => {
    if (!servesReadReplicas(url)) throw new ConfigError(`DATABASE_READ_URLS: entry ${i + 1} is not a postgres:// URL`);
  });
  if (urls.length > 0 && !servesReadReplicas(env.DATABASE_URL ?? ''))
    throw new ConfigError('DATABASE_READ_URLS names replicas of a Postgres database: set DATABASE_URL to its primary (postgres://…)');
  return urls;
}

/** The most workers `serve` forks: past a few per core they only add memory and database connections. */
export const MAX_WORKERS = 64;

/** A worker count: `auto` (one per core this process may use) or an integer from 1 to MAX_WORKERS. */
export function parseWorkerCount(raw: string, name: string): number {
  if (raw === 'auto') return availableParallelism();
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > MAX_WORKERS)
    throw new ConfigError(`${name} must be auto or an integer from 1 to ${MAX_WORKERS} (got "${raw.slice(0, 20)}")`);
  return value;
}

function number(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new ConfigError(`${name} must be a non-negative number (got "${raw.slice(0, 40)}")`);
  return value;
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const value = number(env, name, fallback);
  if (!Number.isInteger(value) || value < min) throw new ConfigError(`${name} must be an integer of at least ${min}`);
  return value;
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = number(env, name, fallback);
  if (value <= 0) throw new ConfigError(`${name} must be greater than 0`);
  return value;
}

/** METRICS_PORT: unset or empty, no metrics; never the API's own port (a scrape would go to the API). */
function metricsPort(env: NodeJS.ProcessEnv, apiPort: number): number | undefined {
  if (env.METRICS_PORT === undefined || env.METRICS_PORT === '') return undefined;
  const value = Number(env.METRICS_PORT);
  if (!Number.isInteger(value) || value < 0 || value > 65535)
    throw new ConfigError(`METRICS_PORT must be an integer between 0 and 65535 (got "${env.METRICS_PORT.slice(0, 20)}")`);
  if (value !== 0 && value === apiPort)
    throw new ConfigError(`METRICS_PORT must differ from PORT (${apiPort}): the metrics have a listener of their own`);
  return value;
}

/** A page reserves ~2 MiB while it is read: below 8 MiB, one large request would wait for another's. */
function memoryBudget(env: NodeJS.ProcessEnv): number {
  const value = positive(env, 'MEMORY_BUDGET_MB', 64);
  if (value < 8) throw new ConfigError(`MEMORY_BUDGET_MB must be at least 8 (got ${value})`);
  return value;
}
