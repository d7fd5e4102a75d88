/** What running the service asks of storage (MaintenanceStore): retention, migrations, readiness, metrics, closing. */

export interface PruneResult {
  workspaceId: string;
  deleted: number;
  prunedThrough: number;
}

/** A connection pool's use now (Store.poolUse). */
export interface PoolUse {
  used: number;
  free: number;
  /** Queries waiting for a connection. */
  pending: number;
  max: number;
}

/** What webhooks owe now (Store.webhookBacklog): enabled endpoints' pending deliveries. */
export interface WebhookBacklog {
  /** Counted up to the cap asked for. */
  pending: number;
  /** When the oldest of what each endpoint sends next was queued (ms), null when nothing is pending. */
  oldestCreatedAt: number | null;
}

export interface MaintenanceStore {
  /** Which database, for people: "SQLite (data/event-feed.sqlite)", "Postgres". */
  readonly description: string;
  /** Deletes every workspace's events stored before `cutoffMs`, in short batches, and what webhooks held of them. */
  pruneAll(cutoffMs: number, batchSize: number): Promise<PruneResult[]>;
  /** Resolves once the database answers a trivial statement (readiness). */
  ping(): Promise<void>;
  /** The primary's connection pool now, from its counters (metrics; no query). */
  poolUse(): PoolUse;
  /** Webhooks' pending deliveries (counted up to `cap`) and the oldest's age, in two cheap statements (metrics). */
  webhookBacklog(cap: number): Promise<WebhookBacklog>;
  /** The cursor secret every instance on this database shares (created by the first to ask). */
  sharedCursorSecret(): Promise<string>;
  /** Applies pending migrations; returns the names applied. Safe when several instances start at once. */
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}
