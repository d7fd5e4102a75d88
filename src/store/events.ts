import type { Knex } from 'knex';
import { dbKind, type Db } from './db.ts';
import { pgAppendStatement } from './pg-append.ts';
import { readPgPage } from './pg-page.ts';
import { mailboxesWatermark } from './retention.ts';
import { placeholders, preparedRows, queryRows, readRows } from './sql.ts';
import { connectionOf, sqliteAppendEvents } from './sqlite-append.ts';

/** An event ready to append: its envelope is final JSON text. */
export interface NewEvent {
  id: string;
  type: string;
  mailboxId: string | null;
  occurredAtMs: number;
  envelope: string;
  idempotencyHash: string | null;
}

export interface StoredEvent {
  seq: number;
  envelope: string;
}

/**
 * A page of the feed as stored: the envelopes' JSON text in seq order, joined by commas, as one
 * UTF-8 buffer (assembled by SQLite itself; written row by row as they arrive on Postgres). Nothing
 * is parsed: the bytes go to the client as they were stored.
 */
export interface StoredPage {
  /** `envelope,envelope,…` (empty when the page is). */
  bytes: Buffer;
  count: number;
  /** Seq of the page's last event; undefined when the page is empty. */
  lastSeq: number | undefined;
  /**
   * For a restricted key's page on Postgres: the retention watermark of its mailboxes, read in the
   * page's own snapshot (feed/expiry.ts), which saves a round trip per page.
   */
  prunedThrough?: number;
}

/** Where Postgres announces each workspace's new last seq, "<workspace> <seq>", as its append commits (feed/heads.ts). */
export const HEADS_CHANNEL = 'event_feed_heads';
const SELECT_PAGE = 'SELECT seq, envelope FROM events WHERE workspace_id = ? AND seq > ? ORDER BY seq LIMIT ?';
/*
 * On SQLite a page's rows are aggregated into one value, as bytes, by the database (in process,
 * so that is the cheapest place to join them). ORDER BY inside group_concat sorts the whole
 * page again (2.7x the cost of the read on a page of 500); without it, the order of the
 * concatenation is not promised, so the seqs are concatenated alongside, in the same aggregate
 * step and thus the same order, and checked in increasing order (readSqlitePage). It always holds
 * for this plan (the subquery yields rows in index order), and a page that failed the check would
 * be read again with the ordered aggregate.
 */
const AGGREGATE_PAGE = {
  sqliteFast: "SELECT CAST(group_concat(envelope, ',') AS BLOB) AS events, group_concat(seq, ',') AS seqs FROM",
  sqliteOrdered: "SELECT CAST(group_concat(envelope, ',' ORDER BY seq) AS BLOB) AS events, group_concat(seq, ',' ORDER BY seq) AS seqs FROM",
};

/** One workspace's share of an append: its events, in the order they take in its feed. */
export interface WorkspaceAppend {
  workspaceId: string;
  events: NewEvent[];
}

/**
 * Appends events to workspaces' feeds, with the webhook deliveries they owe to their workspaces'
 * enabled endpoints (the outbox: delivered if and only if in the feed), and returns, per
 * workspace, the seq of its first new event. On SQLite inside the caller's transaction; on
 * Postgres it is one statement, atomic inside a transaction or alone (store/pg-append.ts).
 *
 * Why this cannot leave a gap a reader could skip: seq values come from the workspace's row in
 * `feed_counters`, incremented here. The UPDATE takes that row's lock and keeps it until the
 * transaction commits or rolls back, so a second writer of the same workspace waits here, then
 * reads the committed counter. Seq values are therefore handed out in commit order: when a reader
 * can see seq N, every seq below N is already committed and visible, and no later commit can land
 * at or below N. A rollback also undoes the increment, so there are no holes either.
 * (A plain sequence or autoincrement hands ids out at insert time, before commit: the write that
 * took 41 can commit after the one that took 42 and a reader past 42 never sees it.)
 *
 * The counters are touched by the last statements of the transaction, so their locks are held only
 * for the inserts that follow. Several workspaces cost no more statements than one (a batch of
 * emits is one round trip on Postgres, not a few per workspace), and their counter rows are locked
 * in workspace order, the one order every writer uses, so two transactions never wait for each
 * other in a cycle. On SQLite the single writer gives the same order.
 */
export async function appendEvents(
  exec: Knex | Knex.Transaction,
  appends: WorkspaceAppend[],
  storedAt: number,
  options: { skipLocked?: boolean } = {},
): Promise<Map<string, number>> {
  const sorted = inWorkspaceOrder(appends);
  const firstSeqs = new Map<string, number>();
  if (dbKind(exec as Db) === 'postgres') {
    // One statement: counters, events, outbox and the heads' notification (store/pg-append.ts).
    // With skipLocked, the workspaces whose counter row another transaction holds are left out of
    // the answer: none of their events was appended (SQLite has one writer: nothing to skip).
    const statement = pgAppendStatement(sorted, storedAt, HEADS_CHANNEL, options.skipLocked);
    const rows = await preparedRows<{ workspace_id: string; last_seq: number; k: number }>(exec, statement);
    for (const row of rows) firstSeqs.set(row.workspace_id, Number(row.last_seq) - Number(row.k) + 1);
    if (options.skipLocked) return firstSeqs;
    for (const { workspaceId } of sorted) if (!firstSeqs.has(workspaceId)) throw new Error(`workspace ${workspaceId} has no feed counter`);
    return firstSeqs;
  }
  if (!(exec as Knex.Transaction).isTransaction) throw new Error('appendEvents on SQLite runs in a transaction');
  return sqliteAppendEvents(await connectionOf(exec as Knex.Transaction), sorted, storedAt);
}

/** The appends that carry events, in workspace order: the order every writer locks counters in. */
export function inWorkspaceOrder(appends: WorkspaceAppend[]): WorkspaceAppend[] {
  const sorted = appends.filter((a) => a.events.length > 0).sort((a, b) => (a.workspaceId < b.workspaceId ? -1 : a.workspaceId > b.workspaceId ? 1 : 0));
  if (sorted.length === 0) throw new Error('appendEvents needs at least one event');
  return sorted;
}

export interface PageQuery {
  workspaceId: string;
  afterSeq: number;
  limit: number;
  /** null: every event; otherwise only events of these mailboxes (events without a mailbox excluded). */
  mailboxes: readonly string[] | null;
}

// Up to this many mailboxes, take the first `limit` of each mailbox from the (workspace, mailbox, seq)
// index and merge: cost follows what the key can see, not how many other events lie in between.
// Past it, one filtered scan of the feed is cheaper.
const PER_MAILBOX_MERGE_MAX = 32;

/**
 * One page of the feed by keyset: seq > afterSeq, in seq order.
 *
 * Read-ahead for readers catching up: after a full page, the next one (same key scope, same limit,
 * after the last seq) is read as soon as the event loop is free, i.e. while this page is on its way
 * to the client and the client parses it; the reader's next call then takes it instead of reading.
 * A reader that catches up sequentially alternates with its client, so this overlaps the two.
 * Only a full prefetched page is ever served: seq values are handed out in commit order (see
 * appendEvents), so the `limit` events after a position never change once visible; a page still
 * short of `limit` may grow, and is read again. Retention only deletes a prefix and the caller
 * checks the watermarks after reading (feed/expiry.ts), exactly as for a fresh read. At most
 * READ_AHEAD_KEPT pages are held per database, none for longer than READ_AHEAD_TTL_MS, none in a
 * transaction; a prefetch that the reader overtakes is cancelled before it runs.
 */
export async function readPage(db: Db | Knex.Transaction, q: PageQuery): Promise<StoredPage> {
  if ((db as Knex.Transaction).isTransaction) return queryPage(db, q);
  const key = pageKey(q);
  const pending = readAhead.get(db);
  const ahead = pending?.get(key);
  let page: StoredPage | undefined;
  if (ahead) {
    pending!.delete(key);
    ahead.cancelled = true;
    if (ahead.page && performance.now() - ahead.startedMs <= READ_AHEAD_TTL_MS) {
      const prefetched = await ahead.page.catch(() => undefined);
      if (prefetched?.count === q.limit) page = prefetched;
    }
  }
  page ??= await queryPage(db, q);
  if (page.count === q.limit && q.limit > 1) scheduleReadAhead(db, { ...q, afterSeq: page.lastSeq! });
  return page;
}

const READ_AHEAD_KEPT = 8;
const READ_AHEAD_TTL_MS = 2000;
interface ReadAhead {
  startedMs: number;
  cancelled: boolean;
  page?: Promise<StoredPage>;
}
const readAhead = new WeakMap<object, Map<string, ReadAhead>>();
const pageKey = (q: PageQuery) => `${q.workspaceId} ${q.afterSeq} ${q.limit} ${q.mailboxes === null ? '*' : q.mailboxes.join(',')}`;

function scheduleReadAhead(db: Db, q: PageQuery): void {
  let pending = readAhead.get(db);
  if (!pending) readAhead.set(db, (pending = new Map()));
  const key = pageKey(q);
  if (pending.has(key)) return;
  const ahead: ReadAhead = { startedMs: performance.now(), cancelled: false };
  pending.set(key, ahead);
  if (pending.size > READ_AHEAD_KEPT) {
    const oldest = pending.keys().next().value!;
    pending.get(oldest)!.cancelled = true;
    pending.delete(oldest);
  }
  setImmediate(() => {
    if (ahead.cancelled) return;
    ahead.startedMs = performance.now();
    ahead.page = queryPage(db, q);
    // A failed read-ahead is forgotten: the reader's own read will report the error, if any.
    ahead.page.catch(() => {
      if (pending.get(key) === ahead) pending.delete(key);
    });
  });
}

async function queryPage(db: Db | Knex.Transaction, q: PageQuery): Promise<StoredPage> {
  const rows = pageRows(q);
  if (!rows) return EMPTY_PAGE;
  if (dbKind(db as Db) === 'sqlite') return readSqlitePage(db, rows);
  // Postgres: the rows written into one buffer as they arrive (store/pg-page.ts). string_agg there
  // was slower end to end (replay 52k against 63k events/s, page of 100 1.15 against 0.92 ms): the
  // database's CPU is the same machine's.
  if (!(db as Knex.Transaction).isTransaction) {
    if (q.mailboxes === null) return readPgPage(db as Db, rows.sql, rows.bindings);
    // A restricted key's page always needs its mailboxes' retention watermark: read in the same
    // statement (one snapshot, one round trip), as a row with a null seq, sorted first.
    const watermark = mailboxesWatermark(q.workspaceId, q.mailboxes);
    return readPgPage(
      db as Db,
      `SELECT seq, envelope FROM (SELECT NULL::bigint AS seq, (${watermark.sql})::text AS envelope UNION ALL (${rows.sql})) page ORDER BY seq NULLS FIRST`,
      [...watermark.bindings, ...rows.bindings],
    );
  }
  // A transaction keeps its connection to itself: its rows, joined here.
  const list = await readRows<StoredEvent>(db, rows.sql, rows.bindings);
  if (list.length === 0) return EMPTY_PAGE;
  return { bytes: Buffer.from(list.map((row) => row.envelope).join(',')), count: list.length, lastSeq: Number(list.at(-1)!.seq) };
}

const EMPTY_PAGE: StoredPage = { bytes: Buffer.alloc(0), count: 0, lastSeq: undefined };

/** Exported for its test (the fallback when the fast aggregate comes back out of order). */
export async function readSqlitePage(db: Db | Knex.Transaction, rows: { sql: string; bindings: Knex.Value[] }): Promise<StoredPage> {
  for (const aggregate of [AGGREGATE_PAGE.sqliteFast, AGGREGATE_PAGE.sqliteOrdered]) {
    const [page] = await readRows<{ events: Buffer | null; seqs: string | null }>(db, `${aggregate} (${rows.sql}) page`, rows.bindings);
    if (!page?.events || page.seqs === null) return EMPTY_PAGE;
    const seqs = page.seqs.split(',').map(Number);
    if (seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!)) return { bytes: page.events, count: seqs.length, lastSeq: seqs.at(-1)! };
  }
  throw new Error('the ordered page aggregate came back out of order');
}

/** The same page as rows, one per event, with its seq: for the readers that need events apart (tests, tools). */
export async function readPageRows(db: Db | Knex.Transaction, q: PageQuery): Promise<StoredEvent[]> {
  const rows = pageRows(q);
  return rows ? readRows<StoredEvent>(db, rows.sql, rows.bindings) : [];
}

/** The statement of a page's rows (seq, envelope) in seq order; undefined when the key can see nothing. */
function pageRows(q: PageQuery): { sql: string; bindings: Knex.Value[] } | undefined {
  if (q.mailboxes === null) return { sql: SELECT_PAGE, bindings: [q.workspaceId, q.afterSeq, q.limit] };
  if (q.mailboxes.length === 0) return undefined;
  if (q.mailboxes.length > PER_MAILBOX_MERGE_MAX) {
    return {
      sql: `SELECT seq, envelope FROM events WHERE workspace_id = ? AND mailbox_id IN (${placeholders(q.mailboxes.length)}) AND seq > ? ORDER BY seq LIMIT ?`,
      bindings: [q.workspaceId, ...q.mailboxes, q.afterSeq, q.limit],
    };
  }
  const perMailbox = q.mailboxes
    .map(
      (_, i) =>
        `SELECT seq FROM (SELECT seq FROM events WHERE workspace_id = ? AND mailbox_id = ? AND seq > ? ORDER BY seq LIMIT ?) m${i}`,
    )
    .join(' UNION ALL ');
  return {
    sql: `SELECT e.seq, e.envelope FROM events e
       JOIN (${perMailbox} ORDER BY seq LIMIT ?) picked ON e.seq = picked.seq
      WHERE e.workspace_id = ?
      ORDER BY e.seq`,
    bindings: [...q.mailboxes.flatMap((mailbox) => [q.workspaceId, mailbox, q.afterSeq, q.limit]), q.limit, q.workspaceId],
  };
}

/** A stored event found by its client-supplied id: what an idempotent replay or a conflict is told from. */
export interface StoredIdRow {
  workspace_id: string;
  id: string;
  envelope: string;
  idempotency_hash: string | null;
}

/** Events with these client-supplied ids already stored, for several workspaces at once. */
export async function findByIds(db: Db | Knex.Transaction, wanted: Array<{ workspaceId: string; ids: string[] }>): Promise<StoredIdRow[]> {
  const asked = wanted.filter((w) => w.ids.length > 0);
  if (asked.length === 0) return [];
  const ids = asked.flatMap((w) => w.ids);
  // Both lists as IN: the (workspace_id, id) unique index serves it; pairs not asked for are dropped below.
  const rows = await queryRows<StoredIdRow>(
    db,
    `SELECT workspace_id, id, envelope, idempotency_hash FROM events WHERE workspace_id IN (${placeholders(asked.length)}) AND id IN (${placeholders(ids.length)})`,
    [...asked.map((w) => w.workspaceId), ...ids],
  );
  const pairs = new Set(asked.flatMap((w) => w.ids.map((id) => `${w.workspaceId} ${id}`)));
  return rows.filter((row) => pairs.has(`${row.workspace_id} ${row.id}`));
}
