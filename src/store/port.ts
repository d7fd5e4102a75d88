/**
 * The storage port: everything the service asks of its database, and the types it speaks in.
 * `openStore` (store/open-store.ts) builds one from DATABASE_URL; store/sqlite/ and
 * store/postgres/ are its adapters, store/common/ what they share. Nothing outside src/store/
 * sees SQL, a driver or which database is behind it: where the databases differ in what they can
 * do, the port says so as a capability (`othersWritesVersion`, `listenForChanges`, `appends`).
 */
import type { Knex } from 'knex';
import type { WebhookAttempt } from '../../generated/types.ts';
import type { Logger } from '../log.ts';
import type { ChangeEvents } from './change-events.ts';
import type { SearchPage, SearchQuery } from './common/event-search.ts';

export type { ChangeEvents } from './change-events.ts';
export type { SearchPage, SearchQuery } from './common/event-search.ts';
export { MERGE_MAX, SCAN_MAX, WINDOW_MAX } from './common/event-search-plans.ts';
export { notStoredBecause, OutcomeUnknown, provesRollback } from './common/write-outcome.ts';
export { LOCK_TIMEOUT_MS, STATEMENT_TIMEOUT_MS } from './common/timeouts.ts';
export { retryingTransient } from './common/write-transaction.ts';

/** An event ready to append: its envelope is final JSON text. */
export interface NewEvent {
  id: string;
  type: string;
  mailboxId: string | null;
  occurredAtMs: number;
  envelope: string;
  /**
   * Set when the client supplied the id (so a retry may find it stored: feed/same-event.ts), with
   * whether it gave occurred_at; null when the server generated the id.
   */
  clientId: { occurredAtGiven: boolean } | null;
}

/** One workspace's share of an append: its events, in the order they take in its feed. */
export interface WorkspaceAppend {
  workspaceId: string;
  events: NewEvent[];
}

/** A stored event found by its client-supplied id: what an idempotent replay or a conflict is told from. */
export interface StoredIdRow {
  workspace_id: string;
  id: string;
  envelope: string;
}

/**
 * Given the events already stored under the appends' client-supplied ids, the appends still to
 * make (the caller's rule: feed/publish.ts). Called once per append, inside its transaction.
 */
export type SortOutStored = (stored: StoredIdRow[]) => WorkspaceAppend[];

/** Per workspace appended to, the seq of its first new event. Workspaces skipped as locked are absent. */
export type FirstSeqs = Map<string, number>;

export interface AppendOptions {
  /** Append inside this transaction of the caller's (the library's publish); otherwise atomically alone. */
  trx?: Knex.Transaction;
  /** Leave out the workspaces whose counter row another transaction holds, instead of waiting (`appends.skipLocked`). */
  skipLocked?: boolean;
}

export interface PageQuery {
  workspaceId: string;
  afterSeq: number;
  limit: number;
  /** null: every event; otherwise only events of these mailboxes (events without a mailbox excluded). */
  mailboxes: readonly string[] | null;
  /** Also return each event's type and occurred_at (for a text about the page, without parsing it). */
  withFacts?: boolean;
  /**
   * The reader is likely a page or more behind the head (a replay, a catch-up): a read replica may
   * answer it (`Store.replicas`), if its page comes back whole; a reader at the head is answered by
   * the primary.
   */
  catchUp?: boolean;
}

/** A read replica as the service sees it now (/readyz, logs). */
export interface ReplicaStatus {
  /** `replica N (host:port/database)`: never credentials. */
  name: string;
  serving: boolean;
  /** Why it does not serve. */
  reason?: string;
  /** How far behind the primary its last applied commit was, at the last probe (null: nothing applied since it started). */
  lagMs?: number | null;
}

/** What a person is told of a page's events without parsing them: per event, in page order. */
export interface EventFacts {
  types: string[];
  /** Each event's seq (its cursor, once encoded: an event stream gives one per event); feed pages only. */
  seqs?: number[];
  /** occurred_at in epoch milliseconds (NaN for an event stored before the column existed). */
  occurredAtMs: number[];
}

/**
 * A page of the feed as stored: the envelopes' JSON text in seq order, joined by commas, as one
 * UTF-8 buffer. Nothing is parsed: the bytes go to the client as they were stored.
 */
export interface StoredPage {
  /** `envelope,envelope,…` (empty when the page is). */
  bytes: Buffer;
  count: number;
  /** Seq of the page's last event; undefined when the page is empty. */
  lastSeq: number | undefined;
  /**
   * The page stopped before `limit` events because the next one would have taken it past the
   * byte cap: more events follow now, although the page is short.
   */
  cutAtByteCap: boolean;
  /**
   * For a restricted key's page on Postgres: the retention watermark of its mailboxes, read in the
   * page's own snapshot (feed/expiry.ts), which saves a round trip per page.
   */
  prunedThrough?: number;
  facts?: EventFacts;
  /** The earliest stored_at (epoch ms) among the page's events; undefined when the page is empty. */
  oldestStoredAtMs?: number;
  /**
   * Read ahead of its request (store/common/read-ahead.ts): unless its events are too recent for
   * any prune (feed/expiry.ts), it proves nothing about what retention removed since.
   */
  prefetched?: boolean;
  /**
   * Read on a replica (store/postgres/replicas.ts): a view of a moment ago, which may predate a
   * prune the primary has made; what retention removed is asked of the primary (feed/expiry.ts).
   */
  fromReplica?: boolean;
}

/** Whether no later read can give this page more events: it holds `limit` events, or stopped at the byte cap. */
export const isWhole = (page: StoredPage, limit: number): boolean => page.count === limit || page.cutAtByteCap;

/** Where a time falls in a workspace's feed (Store.positionAt): what feed_cursor decides from. */
export interface TimePosition {
  /**
   * The seq just before the first retained event stored at or after the time (prunedThrough when
   * that is the oldest retained one); the head when no retained event is.
   */
  seq: number;
  /** The workspace's last seq, read as the search began. */
  head: number;
  /** The retention watermark the search ran above: every seq up to it was pruned. */
  prunedThrough: number;
  /** The workspace's newest stored_at (its head event's, kept on its counter); 0 when unknown (never stored, or all pruned before it was kept). */
  newestStoredAtMs: number;
}

export interface StoredEvent {
  seq: number;
  envelope: string;
}

export interface Workspace {
  id: string;
  name: string;
  verified: boolean;
}

export interface PruneResult {
  workspaceId: string;
  deleted: number;
  prunedThrough: number;
}

/** An API key as stored: what authentication checks a token against. */
export interface KeyRow {
  id: string;
  workspace_id: string;
  secret_sha256: string;
  permissions: string;
  mailboxes: string | null;
  revoked_at: number | null;
}

/** A key as listed: everything but its secret's hash. */
export interface KeyListRow {
  id: string;
  workspace_id: string;
  /** Comma-separated. */
  permissions: string;
  /** JSON array, or null: every mailbox. */
  mailboxes: string | null;
  label: string | null;
  created_at: number;
  revoked_at: number | null;
}

export interface NewKeyRow {
  id: string;
  workspace_id: string;
  secret_sha256: string;
  permissions: string;
  mailboxes: string | null;
  label: string | null;
  created_at: number;
}

export interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  /** JSON array of type patterns; empty: every type. */
  event_types: string;
  enabled: boolean | number;
  disabled_reason: string | null;
  /** When the service disabled it (disabled_reason says why); null otherwise. */
  disabled_at: number | null;
  secret: string;
  /** The secret a rotation replaced: deliveries carry its signature too until previous_secret_expires_at. */
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  /** Unused since migration 012 (test_webhook's cooldown is per workspace and URL). */
  last_tested_at: number | null;
  created_at: number;
  updated_at: number;
}

/** An endpoint's last attempts (at most `window`), and how many of them delivered. */
export interface AttemptHealth {
  attempts: number;
  delivered: number;
}

export interface LeaseRequest {
  owner: string;
  now: number;
  leaseMs: number;
  /** Free slots: the most endpoints to lease. */
  max: number;
  /** The most endpoints of one workspace this owner may hold at once. */
  perWorkspace: number;
}

export interface DueDelivery {
  id: number;
  endpoint_id: string;
  workspace_id: string;
  event_seq: number;
  event_id: string;
  attempts: number;
  /** When the delivery was queued (ms). */
  created_at: number;
  envelope: string | null;
}

export interface AttemptRecord {
  delivery: DueDelivery;
  startedAt: number;
  status: number | null;
  latencyMs: number;
  error: string | null;
  outcome: WebhookAttempt['outcome'];
  nextAttemptAt: number | null;
  /**
   * Disables the endpoint with this reason, in the attempt's transaction; with
   * `unlessDeliveredSince`, only if none of its attempts delivered since then (ms).
   */
  disable?: { reason: string; unlessDeliveredSince?: number };
}

/** A client registered dynamically (RFC 7591): the metadata it registered, as JSON. Clients are public: no secret. */
export interface OAuthClientRow {
  client_id: string;
  metadata: string;
  created_at: number;
  /** When a person first consented to it; null while never used. */
  used_at: number | null;
}

/** An authorization request waiting for the person's consent (src/oauth/consent.ts). */
export interface OAuthRequestRow {
  /** SHA-256 (hex) of the request's handle, the consent form's hidden field. */
  handle_sha256: string;
  /** SHA-256 (hex) of the browser's cookie: the form is only taken from the browser that opened it. */
  browser_sha256: string;
  client_id: string;
  redirect_uri: string;
  /** 1 when the client named redirect_uri in the request (the token request must name it again). */
  redirect_uri_given: number;
  code_challenge: string;
  state: string | null;
  scope: string;
  resource: string;
  /** The API key the person gave, once checked; null before. */
  key_id: string | null;
  key_attempts: number;
  created_at: number;
  expires_at: number;
}

/** A grant's tokens as stored: hashes (SHA-256, hex) and when each stops working. */
export interface OAuthTokenHashes {
  access_sha256: string;
  access_expires_at: number;
  refresh_sha256: string;
  refresh_expires_at: number;
}

/** One consent: its code, then its one live access token and refresh token (hashes only), the family they revoke together. */
export interface OAuthGrantRow {
  id: string;
  client_id: string;
  key_id: string;
  scope: string;
  resource: string;
  created_at: number;
  /** After this nothing of the grant works any more (its code unused, or its refresh token expired). */
  expires_at: number;
  code_sha256: string;
  code_challenge: string;
  redirect_uri: string;
  redirect_uri_given: number;
  code_expires_at: number;
  code_used_at: number | null;
  access_sha256: string | null;
  access_expires_at: number | null;
  refresh_sha256: string | null;
  refresh_expires_at: number | null;
  revoked_at: number | null;
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

/** Listens for changes (ChangeEvents) until stopped. */
export interface ChangeListener {
  stop(): Promise<void>;
}

/** The writes that read before they write, in one transaction (Store.write): an operation's rule runs between them. */
export interface WriteTx {
  /** Until this transaction ends, other such writes of the workspace wait (a count stays true until the insert commits). */
  lockWorkspace(workspaceId: string): Promise<void>;
  /** Until this transaction ends, other such writes for the endpoint wait. */
  lockEndpoint(endpointId: string): Promise<void>;
  findEndpoint(workspaceId: string, url: string): Promise<EndpointRow | undefined>;
  countEndpoints(workspaceId: string): Promise<number>;
  insertEndpoint(row: EndpointRow): Promise<void>;
  updateEndpoint(id: string, changes: Partial<EndpointRow>): Promise<void>;
  removeEndpoint(id: string): Promise<void>;
  /** An endpoint's pending deliveries, counted up to `max`. */
  pendingCountUpTo(endpointId: string, max: number): Promise<number>;
  /** Queues these events for one endpoint, due now, skipping those already pending for it; how many were queued. */
  queueDeliveries(endpointId: string, workspaceId: string, events: Array<{ seq: number; id: string }>, now: number): Promise<number>;
  countActiveKeys(workspaceId: string): Promise<number>;
  insertKey(row: NewKeyRow): Promise<void>;
  findKey(workspaceId: string, keyId: string): Promise<KeyListRow | undefined>;
}

export interface Store {
  /** Which database, for people: "SQLite (data/event-feed.sqlite)", "Postgres". */
  readonly description: string;
  /**
   * SQLite: a value that changes whenever another process committed to the file since this one
   * last looked (its own commits leave it alone); undefined when it cannot be told now. Absent
   * where a change channel tells instead (`listenForChanges`).
   */
  readonly othersWritesVersion?: () => string | undefined;
  /**
   * Postgres: tells `events` of every commit's new head and every key changed, by every instance
   * (store/postgres/changes.ts). Absent where nothing else writes without this process knowing.
   */
  readonly listenForChanges?: (events: ChangeEvents, log: Logger, options?: { pingIntervalMs?: number; pingTimeoutMs?: number }) => ChangeListener;
  /**
   * Read replicas (Postgres, DATABASE_READ_URLS) that serve catch-up pages (postgres/replicas.ts):
   * none serves until `watch` probes them (the server does; the CLI and the library read the primary).
   */
  readonly replicas?: {
    status(): ReplicaStatus[];
    watch(log: Logger): { stop(): Promise<void> };
  };
  /**
   * How appends may share the database: `concurrent` statements in flight at once (1: a single
   * writer), and whether one may skip the workspaces another transaction holds (AppendOptions.skipLocked).
   */
  readonly appends: { concurrent: number; skipLocked: boolean };

  /**
   * Appends events (in workspace order, every writer's lock order) with the webhook deliveries
   * they owe (the outbox); `sortOut` first drops those already stored under their client id.
   * See store/common/events.ts for why this leaves no gap a reader could skip.
   */
  append(appends: WorkspaceAppend[], storedAt: number, sortOut: SortOutStored, options?: AppendOptions): Promise<FirstSeqs>;
  /** One page of the feed by keyset: seq > afterSeq, in seq order, bounded by `limit` and the page byte cap. */
  readPage(q: PageQuery): Promise<StoredPage>;
  /** The same events as rows, one per event, with its seq, no byte cap: for readers that need events apart (tools, tests). */
  readPageRows(q: PageQuery): Promise<StoredEvent[]>;
  /** list_events: the matching events below a keyset, newest first, each call's work bounded. */
  searchEvents(q: SearchQuery): Promise<SearchPage>;
  /** Seq, id and type of up to `limit` events after `afterSeq` (redeliver_webhook). */
  eventsAfter(workspaceId: string, afterSeq: number, limit: number): Promise<Array<{ seq: number; id: string; type: string }>>;

  /** The workspace's last seq (0 before its first event): no event of it lies past this. */
  feedHead(workspaceId: string): Promise<number>;
  /** The same for several workspaces at once (0 for one without events). */
  feedHeads(workspaceIds: readonly string[]): Promise<Map<string, number>>;
  /**
   * Where `atMs` falls in the workspace's feed: the seq just before its first retained event stored
   * at or after it, found by a binary search of primary-key lookups (stored_at never goes down
   * along a workspace's seqs: common/time-position.ts), with the head and the watermark it ran
   * between. `Infinity`: the head, with no lookup.
   */
  positionAt(workspaceId: string, atMs: number): Promise<TimePosition>;
  /** The highest seq pruned from a workspace's feed (0 when nothing was): every seq up to it is gone. */
  prunedThrough(workspaceId: string): Promise<number>;
  /** The highest seq pruned among these mailboxes' events: what a restricted key may have missed. */
  prunedThroughMailboxes(workspaceId: string, mailboxes: readonly string[]): Promise<number>;
  /** Deletes every workspace's events stored before `cutoffMs`, in short batches, and what webhooks held of them. */
  pruneAll(cutoffMs: number, batchSize: number): Promise<PruneResult[]>;

  /** Reads, then writes, in one transaction, run again on a transient conflict. */
  write<T>(work: (tx: WriteTx) => Promise<T>): Promise<T>;

  createWorkspace(name: string, verified: boolean, now: number): Promise<Workspace>;
  findWorkspace(id: string): Promise<Workspace | undefined>;
  countWorkspaces(): Promise<number>;
  listWorkspaces(): Promise<Array<Workspace & { created_at: string }>>;

  keys: {
    /** The key row a token names, revoked or not. */
    byId(keyId: string): Promise<KeyRow | undefined>;
    insert(row: NewKeyRow): Promise<void>;
    /** Every key of a workspace, oldest first. */
    list(workspaceId: string): Promise<KeyListRow[]>;
    /** Up to `limit` keys of a workspace after the key id `afterId`, in id (creation) order. */
    after(workspaceId: string, options: { afterId?: string; includeRevoked: boolean; limit: number }): Promise<KeyListRow[]>;
    find(workspaceId: string, keyId: string): Promise<KeyListRow | undefined>;
    /** Marks a key revoked; false when no active key has this id. */
    revoke(keyId: string, now: number): Promise<boolean>;
  };

  webhooks: {
    findEndpoint(workspaceId: string, url: string): Promise<EndpointRow | undefined>;
    listEndpoints(workspaceId: string): Promise<EndpointRow[]>;
    /** Leases up to `max` endpoints with deliveries due and no live lease, fairly across workspaces. */
    leaseEndpoints(request: LeaseRequest): Promise<EndpointRow[]>;
    renewLease(endpointId: string, owner: string, until: number): Promise<boolean>;
    releaseLease(endpointId: string, owner: string, pauseUntil?: number | null): Promise<void>;
    dueDeliveries(endpointId: string, now: number, max: number): Promise<DueDelivery[]>;
    /** Records an attempt; `disabled` is true when it disabled an endpoint that was enabled (once, whichever instance). */
    recordAttempt(record: AttemptRecord): Promise<{ disabled: boolean }>;
    pendingCount(endpointId: string): Promise<number>;
    recentAttempts(endpointId: string, max?: number): Promise<WebhookAttempt[]>;
    /** The endpoint's last `window` attempts counted, by the (endpoint_id, id) index: bounded whatever its history. */
    attemptHealth(endpointId: string, window: number): Promise<AttemptHealth>;
    /**
     * Claims the test slot of a URL of the workspace at `now` unless it was claimed less than
     * `cooldownMs` ago, whichever endpoint row held the URL then (one conditional upsert: instances
     * agree); when refused, the ms left to wait.
     */
    claimTestSlot(workspaceId: string, url: string, now: number, cooldownMs: number): Promise<{ claimed: true } | { claimed: false; waitMs: number }>;
  };

  /** The OAuth authorization server's tables (src/oauth/): registered clients, pending requests, grants. */
  oauth: {
    /**
     * Registers a client unless `cap` are registered, after deleting a batch of those never used
     * and registered before `unusedBefore`; false when full. Concurrent registrations may pass the
     * cap by how many run at once.
     */
    registerClient(row: OAuthClientRow, limits: { cap: number; unusedBefore: number }): Promise<boolean>;
    client(clientId: string): Promise<OAuthClientRow | undefined>;
    markClientUsed(clientId: string, now: number): Promise<void>;
    /** Stores a pending request unless `cap` unexpired ones wait (expired ones are deleted first, a batch at a time); false when full. */
    addRequest(row: OAuthRequestRow, limits: { cap: number; now: number }): Promise<boolean>;
    request(handleSha256: string): Promise<OAuthRequestRow | undefined>;
    updateRequest(handleSha256: string, changes: { key_id?: string | null; key_attempts?: number }): Promise<void>;
    /** Deletes a pending request; true only for the call that deleted it (a consent is given once). */
    takeRequest(handleSha256: string): Promise<boolean>;
    /**
     * Stores a grant. First deletes the key's dead grants (expired or revoked: nothing of them works
     * any more, whether their row is there or not), and revokes its oldest live ones so that at most
     * `maxPerKey` live grants remain with this one: a key's rows stay bounded.
     */
    addGrant(row: OAuthGrantRow, limits: { maxPerKey: number; now: number }): Promise<void>;
    grant(id: string): Promise<OAuthGrantRow | undefined>;
    grantByCode(codeSha256: string): Promise<OAuthGrantRow | undefined>;
    /** The grant an access token belongs to (every MCP request with a token asks: one fixed indexed statement). */
    grantByAccessToken(accessSha256: string): Promise<OAuthGrantRow | undefined>;
    /** Gives the grant its tokens if its code is unused, unexpired and the grant live; false otherwise (the code is spent once). */
    redeemCode(codeSha256: string, now: number, tokens: OAuthTokenHashes): Promise<boolean>;
    /** Replaces the grant's tokens if `refreshSha256` is still its refresh token, unexpired, and the grant live (rotation); false otherwise. */
    rotateTokens(grantId: string, refreshSha256: string, now: number, tokens: OAuthTokenHashes): Promise<boolean>;
    revokeGrant(grantId: string, now: number): Promise<void>;
  };

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
  /** The knex handle underneath, for the library's users (their own transactions) and for tools. */
  readonly knex: Knex;
  close(): Promise<void>;
}
