import type { Knex } from 'knex';
import { dbKind, type Db } from './db.ts';
import { pgAppendStatement } from './pg-append.ts';
import { placeholders, preparedRows, queryRows } from './sql.ts';
import { connectionOf, sqliteAppendEvents } from './sqlite-append.ts';

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

/** Where Postgres announces each workspace's new last seq, "<workspace> <seq>", as its append commits (feed/heads.ts). */
export const HEADS_CHANNEL = 'event_feed_heads';
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

/** A stored event found by its client-supplied id: what an idempotent replay or a conflict is told from. */
export interface StoredIdRow {
  workspace_id: string;
  id: string;
  envelope: string;
}

/** Events with these client-supplied ids already stored, for several workspaces at once. */
export async function findByIds(db: Db | Knex.Transaction, wanted: Array<{ workspaceId: string; ids: string[] }>): Promise<StoredIdRow[]> {
  const asked = wanted.filter((w) => w.ids.length > 0);
  if (asked.length === 0) return [];
  const ids = asked.flatMap((w) => w.ids);
  // Both lists as IN: the (workspace_id, id) unique index serves it; pairs not asked for are dropped below.
  const rows = await queryRows<StoredIdRow>(
    db,
    `SELECT workspace_id, id, envelope FROM events WHERE workspace_id IN (${placeholders(asked.length)}) AND id IN (${placeholders(ids.length)})`,
    [...asked.map((w) => w.workspaceId), ...ids],
  );
  const pairs = new Set(asked.flatMap((w) => w.ids.map((id) => `${w.workspaceId} ${id}`)));
  return rows.filter((row) => pairs.has(`${row.workspace_id} ${row.id}`));
}

// The feed's reads moved to store/feed-page.ts; these names stay importable from here for now.
export { readPage, readPageRows, type PageQuery, type StoredEvent, type StoredPage } from './feed-page.ts';
