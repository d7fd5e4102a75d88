import type { Knex } from 'knex';
import type { Db } from './db.ts';
import type { StoredEvent } from './events.ts';

/** list_events' query: every filter already normalized and checked by the operation. */
export interface SearchQuery {
  workspaceId: string;
  /** Only these types; null: any type. */
  types: readonly string[] | null;
  /** Only events of these mailboxes (events without a mailbox excluded); null: any, with or without one. */
  mailboxes: readonly string[] | null;
  /** occurred_at_ms ≥ this; null: no lower bound. */
  occurredFromMs: number | null;
  /** occurred_at_ms < this; null: no upper bound. */
  occurredBeforeMs: number | null;
  /** Keyset: only seq < this (the last seq of the previous page); null: from the newest event. */
  beforeSeq: number | null;
  limit: number;
}

type Reader = Db | Knex.Transaction;

/*
 * How each query finds its rows (newest first = descending seq; keyset on seq, never OFFSET):
 *
 * 1. A time bound whose window is small: the (workspace_id, occurred_at_ms, seq) index gives every
 *    seq of the window below the keyset in at most WINDOW_MAX + 1 index entries (a covering,
 *    index-only probe); the page is then read by primary key among those seqs. Without this, the
 *    last page of "the last hour" would scan the whole feed down to seq 1 to prove nothing older
 *    matches, since occurred_at (client-supplied, backfills allowed) says nothing about seq.
 * 2. Mailboxes (asked for, or the key's scope), up to MERGE_MAX of them: the newest `limit` of each
 *    mailbox from the (workspace_id, mailbox_id, seq) index, merged — as event_feed does, in
 *    reverse. Types and time are checked on the rows those scans visit.
 * 3. Types only: the same per-key merge on the (workspace_id, type, seq) index. A rare type
 *    (bounces, complaints) costs what it returns, not the events in between.
 * 4. Otherwise (no key filter, or more mailboxes than MERGE_MAX): one backward scan of the primary
 *    key (workspace_id, seq), filtering as it goes; it stops after `limit` matches.
 * A window too large for (1) falls through to (2)–(4): it then matches densely enough that those
 * scans stop soon. The time bounds are written `+occurred_at_ms` there: the unary plus (a no-op on
 * both SQLite and Postgres) keeps the planner from trading the seq-ordered scan for a range scan
 * of the occurred_at index plus a sort of the whole window.
 */
const WINDOW_MAX = 1000;
const MERGE_MAX = 32;

/** The matching events, newest first (descending seq), at most `limit`. */
export async function searchEvents(db: Reader, q: SearchQuery): Promise<StoredEvent[]> {
  if (q.limit < 1 || q.types?.length === 0 || q.mailboxes?.length === 0) return [];
  if (q.occurredFromMs !== null && q.occurredBeforeMs !== null && q.occurredFromMs >= q.occurredBeforeMs) return [];
  if (q.occurredFromMs !== null || q.occurredBeforeMs !== null) {
    const window = await windowSeqs(db, q);
    if (window !== null) return readAmong(db, q, window);
  }
  if (q.mailboxes !== null && q.mailboxes.length <= MERGE_MAX) return mergedScans(db, q, 'mailbox_id', q.mailboxes);
  if (q.mailboxes === null && q.types !== null) return mergedScans(db, q, 'type', q.types);
  return backwardScan(db, q);
}

/** Plan 1's probe: the seqs in the time window below the keyset, or null when there are more than WINDOW_MAX. */
async function windowSeqs(db: Reader, q: SearchQuery): Promise<number[] | null> {
  const query = db('events').select('seq').where('workspace_id', q.workspaceId);
  if (q.occurredFromMs !== null) query.andWhere('occurred_at_ms', '>=', q.occurredFromMs);
  if (q.occurredBeforeMs !== null) query.andWhere('occurred_at_ms', '<', q.occurredBeforeMs);
  if (q.beforeSeq !== null) query.andWhere('seq', '<', q.beforeSeq);
  const rows: Array<{ seq: number }> = await query.limit(WINDOW_MAX + 1);
  return rows.length > WINDOW_MAX ? null : rows.map((row) => Number(row.seq));
}

async function readAmong(db: Reader, q: SearchQuery, seqs: number[]): Promise<StoredEvent[]> {
  if (seqs.length === 0) return [];
  const query = db('events').select('seq', 'envelope').where('workspace_id', q.workspaceId).whereIn('seq', seqs);
  if (q.types !== null) query.whereIn('type', q.types as string[]);
  if (q.mailboxes !== null) query.whereIn('mailbox_id', q.mailboxes as string[]);
  return query.orderBy('seq', 'desc').limit(q.limit);
}

/** Conditions checked on the rows a keyed scan visits, as SQL and bindings (never on its key). */
function residual(q: SearchQuery, key: 'mailbox_id' | 'type' | null): { sql: string; bindings: Array<string | number> } {
  const parts: string[] = [];
  const bindings: Array<string | number> = [];
  if (q.beforeSeq !== null) {
    parts.push('seq < ?');
    bindings.push(q.beforeSeq);
  }
  if (q.types !== null && key !== 'type') {
    parts.push(`type IN (${q.types.map(() => '?').join(', ')})`);
    bindings.push(...q.types);
  }
  if (q.mailboxes !== null && key !== 'mailbox_id') {
    parts.push(`mailbox_id IN (${q.mailboxes.map(() => '?').join(', ')})`);
    bindings.push(...q.mailboxes);
  }
  if (q.occurredFromMs !== null) {
    parts.push('+occurred_at_ms >= ?');
    bindings.push(q.occurredFromMs);
  }
  if (q.occurredBeforeMs !== null) {
    parts.push('+occurred_at_ms < ?');
    bindings.push(q.occurredBeforeMs);
  }
  return { sql: parts.map((part) => ` AND ${part}`).join(''), bindings };
}

/** Plans 2 and 3: the newest `limit` matches under each key, from the (workspace_id, key, seq) index, merged. */
async function mergedScans(db: Reader, q: SearchQuery, key: 'mailbox_id' | 'type', values: readonly string[]): Promise<StoredEvent[]> {
  const rest = residual(q, key);
  const perKey = values
    .map((_, i) => `SELECT seq FROM (SELECT seq FROM events WHERE workspace_id = ? AND ${key} = ?${rest.sql} ORDER BY seq DESC LIMIT ?) k${i}`)
    .join(' UNION ALL ');
  const bindings = values.flatMap((value) => [q.workspaceId, value, ...rest.bindings, q.limit]);
  const result = await db.raw(
    `SELECT e.seq, e.envelope FROM events e
       JOIN (${perKey} ORDER BY seq DESC LIMIT ?) picked ON e.seq = picked.seq
      WHERE e.workspace_id = ?
      ORDER BY e.seq DESC`,
    [...bindings, q.limit, q.workspaceId],
  );
  // knex.raw answers differently per driver: pg gives { rows }, better-sqlite3 the rows themselves.
  return (Array.isArray(result) ? result : result.rows) as StoredEvent[];
}

/** Plan 4: the primary key (workspace_id, seq), backwards from the keyset. */
async function backwardScan(db: Reader, q: SearchQuery): Promise<StoredEvent[]> {
  const rest = residual(q, null);
  const result = await db.raw(
    `SELECT seq, envelope FROM events WHERE workspace_id = ?${rest.sql} ORDER BY seq DESC LIMIT ?`,
    [q.workspaceId, ...rest.bindings, q.limit],
  );
  return (Array.isArray(result) ? result : result.rows) as StoredEvent[];
}
