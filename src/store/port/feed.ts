/**
 * What the feed asks of storage (FeedStore): appends, pages, list_events, heads and positions.
 * Taken by feed/ and by the operations that read the feed.
 */
import type { SearchPage, SearchQuery } from '../common/event-search.ts';

export type { SearchPage, SearchQuery } from '../common/event-search.ts';

/** An event ready to append: its envelope is final JSON text. */
export interface NewEvent {
  id: string;
  type: string;
  mailboxId: string | null;
  occurredAtMs: number;
  envelope: string;
  /**
   * Set when the client supplied the id (so a retry may find it stored: sameEvent), with
   * whether it gave occurred_at; null when the server generated the id.
   */
  clientId: { occurredAtGiven: boolean } | null;
  /** The emit's trace context (a W3C traceparent) while tracing is on, kept with the deliveries it owes. */
  traceContext?: string;
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
 * make (the caller's rule: appendPrepared's). Called once per append, inside its transaction.
 */
export type SortOutStored = (stored: StoredIdRow[]) => WorkspaceAppend[];

/** Per workspace appended to, the seq of its first new event. Workspaces skipped as locked are absent. */
export type FirstSeqs = Map<string, number>;

export interface AppendOptions {
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
   * page's own snapshot (the feed's expiry check), which saves a round trip per page.
   */
  prunedThrough?: number;
  facts?: EventFacts;
  /** The earliest stored_at (epoch ms) among the page's events; undefined when the page is empty. */
  oldestStoredAtMs?: number;
  /**
   * Read ahead of its request (pageReader): unless its events are too recent for
   * any prune (the feed's expiry check), it proves nothing about what retention removed since.
   */
  prefetched?: boolean;
  /**
   * Read on a replica (ReadReplicas): a view of a moment ago, which may predate a
   * prune the primary has made; what retention removed is asked of the primary (the feed's expiry check).
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

export interface FeedStore {
  /**
   * How appends may share the database: `concurrent` statements in flight at once (1: a single
   * writer), and whether one may skip the workspaces another transaction holds (AppendOptions.skipLocked).
   */
  readonly appends: { concurrent: number; skipLocked: boolean };

  /**
   * Appends events (in workspace order, every writer's lock order) with the webhook deliveries
   * they owe (the outbox); `sortOut` first drops those already stored under their client id.
   * See the write path's notes beside inWorkspaceOrder for why this leaves no gap a reader could skip.
   */
  append(appends: WorkspaceAppend[], storedAt: number, sortOut: SortOutStored, options?: AppendOptions): Promise<FirstSeqs>;
  /** Runs `attempt` again (after a short pause) while it fails with a transient conflict of this database, whose transaction rolled back whole. */
  retryingTransient<T>(attempt: () => Promise<T>): Promise<T>;
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
   * along a workspace's seqs: positionAt), with the head and the watermark it ran
   * between. `Infinity`: the head, with no lookup.
   */
  positionAt(workspaceId: string, atMs: number): Promise<TimePosition>;
  /** The highest seq pruned from a workspace's feed (0 when nothing was): every seq up to it is gone. */
  prunedThrough(workspaceId: string): Promise<number>;
  /** The highest seq pruned among these mailboxes' events: what a restricted key may have missed. */
  prunedThroughMailboxes(workspaceId: string, mailboxes: readonly string[]): Promise<number>;
  /**
   * The highest seq at or below `throughSeq` among the retained events of these mailboxes (0 when
   * none): a restricted key's positions, which depend on its own mailboxes' events only (feed_cursor).
   */
  lastSeqOfMailboxes(workspaceId: string, mailboxes: readonly string[], throughSeq: number): Promise<number>;
}
