import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { OPERATION_IDS, type OperationId } from '../../generated/operations.ts';
import type { WebhookAttempt } from '../../generated/types.ts';
import type { LimitReason } from '../base/errors.ts';
import type { HeldKind } from '../feed/held-reads.ts';
import type { PoolUse, WebhookBacklog } from '../store/port.ts';

/** Which edge answered: the `/v1` routes and the site, or MCP. */
export type Transport = 'http' | 'mcp';

/** An operation of the contract, or `other`: the site, the probes, unknown paths, MCP messages that call no tool. */
export type OperationLabel = OperationId | 'other';

/** One answered request, as the front door saw it (startRequest). */
export interface RequestOutcome {
  operation: OperationLabel;
  transport: Transport;
  status: number;
  /** The contract's error code when it failed (a tool error over MCP answers 200 with one). */
  errorCode: string | undefined;
  /** Which limit refused it, for a rate_limited one. */
  limit: LimitReason | undefined;
  seconds: number;
}

/** What the gauges read at scrape time: nothing is kept up to date between scrapes. */
export interface ScrapeSources {
  heldReads(kind: HeldKind): number;
  pool(): PoolUse;
  webhookBacklog(cap: number): Promise<WebhookBacklog>;
  now(): number;
}

const OPERATIONS: ReadonlySet<string> = new Set(OPERATION_IDS);
/** A label value from the contract's fixed set, never a string a client chose. */
export const operationLabel = (name: string | undefined): OperationLabel =>
  name !== undefined && OPERATIONS.has(name) ? (name as OperationId) : 'other';

/** Pending deliveries are counted up to this at a scrape (Store.webhookBacklog): a larger backlog reads as this. */
export const WEBHOOK_PENDING_CAP = 100_000;
/** How long one backlog look answers for: several scrapers (or workers) cost one query per this. */
const BACKLOG_REUSE_MS = 5_000;

/** Up to 60 s: a long-poll (`Prefer: wait`) is a request that may last that long. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Group commit statements carry 1 to GROUP_COMMIT_MAX_EVENTS (256) events. */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/**
 * The process's metrics, in Prometheus's text format (prom-client), built once per process
 * (startServer) and served on a listener of their own (listenForScrapes). Every label comes from
 * a fixed set (operation ids of the contract, status codes, error codes, transports, limit
 * reasons, outcomes): nothing per key or per workspace, so the series stay bounded however many
 * tenants there are. Counted at the edges and the group commit; the operations know nothing of it.
 *
 * Gauges are read when scraped (ScrapeSources); under `serve --workers` the primary sums what each
 * worker reports (reportToPrimary), except the database-wide backlog, which every worker reads
 * alike and is taken once (`max`).
 */
export class Metrics {
  readonly registry = new Registry();
  #sources: ScrapeSources | undefined;
  #backlog: { atMs: number; value: Promise<WebhookBacklog> } | undefined;

  readonly #requests = new Counter({
    name: 'event_feed_requests_total',
    help: 'Requests answered, by operation (contract operationId, or other), transport (http, mcp), status code and error code (none when it succeeded).',
    labelNames: ['operation', 'transport', 'status', 'code'] as const,
    registers: [this.registry],
  });
  readonly #latency = new Histogram({
    name: 'event_feed_request_duration_seconds',
    help: 'Time from a request to the end of its answer, by operation and transport (held long-polls included: up to their wait).',
    labelNames: ['operation', 'transport'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  readonly #rateLimited = new Counter({
    name: 'event_feed_rate_limited_total',
    help: 'Requests refused with 429 (or an MCP rate_limited tool error), by the limit that refused them: key, workspace, address, held_reads, memory, draining, quota, other.',
    labelNames: ['reason', 'transport'] as const,
    registers: [this.registry],
  });
  readonly #pages = new Counter({
    name: 'event_feed_pages_served_total',
    help: 'Pages of events served (event_feed, list_events; each page of an event stream), by operation and transport.',
    labelNames: ['operation', 'transport'] as const,
    registers: [this.registry],
  });
  readonly #pageBytes = new Counter({
    name: 'event_feed_page_bytes_served_total',
    help: 'Bytes of the pages served, by operation and transport.',
    labelNames: ['operation', 'transport'] as const,
    registers: [this.registry],
  });
  readonly #appended = new Counter({
    name: 'event_feed_events_appended_total',
    help: 'Events appended to the feed by this process (idempotent replays of stored events not counted).',
    registers: [this.registry],
  });
  readonly #batches = new Histogram({
    name: 'event_feed_group_commit_batch_events',
    help: 'Events per group commit statement (emits sharing one transaction).',
    buckets: BATCH_BUCKETS,
    registers: [this.registry],
  });
  readonly #webhookAttempts = new Counter({
    name: 'event_feed_webhook_deliveries_total',
    help: 'Webhook delivery attempts recorded, by outcome: delivered, retry, failed (retries exhausted, or the event past retention), disabled (the endpoint answered 410).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  constructor() {
    const sources = () => this.#sources;
    new Gauge({
      name: 'event_feed_held_reads',
      help: 'Reads held open now, by kind: long_poll (event_feed with Prefer: wait), stream (Server-Sent Events).',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      collect() {
        const from = sources();
        for (const kind of ['long_poll', 'stream'] as const) this.set({ kind }, from?.heldReads(kind) ?? 0);
      },
    });
    new Gauge({
      name: 'event_feed_db_pool_connections',
      help: 'The primary database pool: connections used, free, and queries pending for one (SQLite: the one writing connection).',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        const use = sources()?.pool();
        if (!use) return;
        this.set({ state: 'used' }, use.used);
        this.set({ state: 'free' }, use.free);
        this.set({ state: 'pending' }, use.pending);
      },
    });
    new Gauge({
      name: 'event_feed_db_pool_max',
      help: 'The most connections the primary database pool opens.',
      registers: [this.registry],
      collect() {
        const use = sources()?.pool();
        if (use) this.set(use.max);
      },
    });
    const backlog = () => this.#webhookBacklog();
    new Gauge({
      name: 'event_feed_webhook_deliveries_pending',
      help: `Webhook deliveries owed to enabled endpoints (database-wide; counted up to ${WEBHOOK_PENDING_CAP}).`,
      aggregator: 'max',
      registers: [this.registry],
      async collect() {
        const value = await backlog();
        if (value) this.set(value.pending);
      },
    });
    new Gauge({
      name: 'event_feed_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest delivery an enabled endpoint sends next (database-wide; 0 when none is pending).',
      aggregator: 'max',
      registers: [this.registry],
      async collect() {
        const value = await backlog();
        const now = sources()?.now();
        if (value && now !== undefined) this.set(value.oldestCreatedAt === null ? 0 : Math.max(0, (now - value.oldestCreatedAt) / 1000));
      },
    });
    // process_* and nodejs_* under their usual names (memory, CPU, event-loop lag, GC): what
    // existing Node dashboards read.
    collectDefaultMetrics({ register: this.registry });
  }

  /** Where the gauges read from, once the services exist (startServer). */
  observe(sources: ScrapeSources): void {
    this.#sources = sources;
  }

  request(outcome: RequestOutcome): void {
    const { operation, transport } = outcome;
    this.#requests.inc({ operation, transport, status: String(outcome.status), code: outcome.errorCode ?? 'none' });
    this.#latency.observe({ operation, transport }, outcome.seconds);
    if (outcome.status === 429 || outcome.errorCode === 'rate_limited')
      this.#rateLimited.inc({ reason: outcome.limit ?? 'other', transport });
  }

  /** A page written to a client (a JSON answer, a tool's result, or one page of a stream). */
  pageServed(operation: OperationLabel, transport: Transport, bytes: number): void {
    this.#pages.inc({ operation, transport });
    this.#pageBytes.inc({ operation, transport }, bytes);
  }

  /** One group commit statement (CommitObserver). */
  committed(statement: { events: number; appended: number }): void {
    this.#batches.observe(statement.events);
    this.#appended.inc(statement.appended);
  }

  webhookAttempt(outcome: WebhookAttempt['outcome']): void {
    this.#webhookAttempts.inc({ outcome });
  }

  /** The exposition text of this process. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** One backlog look per BACKLOG_REUSE_MS, shared by both gauges of a scrape; undefined when it failed (the gauges keep their last value). */
  async #webhookBacklog(): Promise<WebhookBacklog | undefined> {
    const from = this.#sources;
    if (!from) return undefined;
    const now = from.now();
    if (!this.#backlog || now - this.#backlog.atMs >= BACKLOG_REUSE_MS)
      this.#backlog = { atMs: now, value: from.webhookBacklog(WEBHOOK_PENDING_CAP) };
    return this.#backlog.value.catch(() => undefined);
  }
}
