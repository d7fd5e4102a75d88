import type { Knex } from 'knex';
import type { PageQuery, StoredEvent, StoredIdRow, WorkspaceAppend } from '../port.ts';
import { placeholders, type RawRows } from './sql.ts';

/*
 * Every adapter's append (Store.append) adds events to workspaces' feeds with the webhook
 * deliveries they owe to their workspaces' enabled endpoints (the outbox: delivered if and only if
 * in the feed), and returns, per workspace, the seq of its first new event. SQLite: a synchronous
 * transaction on the writing connection (appendOnSqlite); Postgres: one statement, atomic inside
 * a transaction or alone (appendOnPostgres).
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

/** The workspace's last seq (0 before its first event, or for a workspace that does not exist). */
export async function feedHead(
  readRows: <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>,
  workspaceId: string,
): Promise<number> {
  const [row] = await readRows<{ last_seq: number }>('SELECT last_seq FROM feed_counters WHERE workspace_id = ?', [workspaceId]);
  return Number(row?.last_seq ?? 0);
}

/** The last seq of each of these workspaces (0 for one without events), a few hundred per statement. */
export async function feedHeads(
  readRows: <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>,
  workspaceIds: readonly string[],
): Promise<Map<string, number>> {
  const heads = new Map<string, number>(workspaceIds.map((id) => [id, 0]));
  for (let i = 0; i < workspaceIds.length; i += HEADS_PER_STATEMENT) {
    const ids = workspaceIds.slice(i, i + HEADS_PER_STATEMENT);
    const rows = await readRows<{ workspace_id: string; last_seq: number }>(
      `SELECT workspace_id, last_seq FROM feed_counters WHERE workspace_id IN (${ids.map(() => '?').join(', ')})`,
      ids,
    );
    for (const row of rows) heads.set(row.workspace_id, Number(row.last_seq));
  }
  return heads;
}

const HEADS_PER_STATEMENT = 500;

/** The appends that carry events, in workspace order: the order every writer locks counters in. */
export function inWorkspaceOrder(appends: WorkspaceAppend[]): WorkspaceAppend[] {
  const sorted = appends
    .filter((a) => a.events.length > 0)
    .sort((a, b) => (a.workspaceId < b.workspaceId ? -1 : a.workspaceId > b.workspaceId ? 1 : 0));
  if (sorted.length === 0) throw new Error('appendEvents needs at least one event');
  return sorted;
}

/** The client-supplied ids of these events (generated ones cannot be stored yet). */
export const idsToLookUp = (appends: WorkspaceAppend[]) =>
  appends.map(({ workspaceId, events }) => ({
    workspaceId,
    ids: events.filter((event) => event.clientId !== null).map((event) => event.id),
  }));

/** Events with these client-supplied ids already stored, for several workspaces at once. */
export async function findByIds(
  rows: RawRows,
  db: Knex | Knex.Transaction,
  wanted: Array<{ workspaceId: string; ids: string[] }>,
): Promise<StoredIdRow[]> {
  const asked = wanted.filter((w) => w.ids.length > 0);
  if (asked.length === 0) return [];
  const ids = asked.flatMap((w) => w.ids);
  // Both lists as IN: the (workspace_id, id) unique index serves it; pairs not asked for are dropped below.
  const found = await rows<StoredIdRow>(
    db,
    `SELECT workspace_id, id, envelope FROM events WHERE workspace_id IN (${placeholders(asked.length)}) AND id IN (${placeholders(ids.length)})`,
    [...asked.map((w) => w.workspaceId), ...ids],
  );
  return onlyAsked(asked, found);
}

/** The rows of pairs (workspace, id) asked for: a lookup by both IN lists also finds pairs not asked. */
export function onlyAsked<T extends { workspace_id: string; id: string }>(
  asked: Array<{ workspaceId: string; ids: string[] }>,
  rows: T[],
): T[] {
  const pairs = new Set(asked.flatMap((w) => w.ids.map((id) => `${w.workspaceId} ${id}`)));
  return rows.filter((row) => pairs.has(`${row.workspace_id} ${row.id}`));
}

/** Seq, id and type of up to `limit` events after `afterSeq`, in seq order. */
export function eventsAfter(
  db: Knex,
  workspaceId: string,
  afterSeq: number,
  limit: number,
): Promise<Array<{ seq: number; id: string; type: string }>> {
  return db('events')
    .select('seq', 'id', 'type')
    .where('workspace_id', workspaceId)
    .andWhere('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit);
}

/** The page's events as rows (Store.readPageRows), read with `readRows`. */
export function readPageRows(
  readRows: <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>,
  q: PageQuery,
): Promise<StoredEvent[]> {
  if (q.mailboxes !== null && q.mailboxes.length === 0) return Promise.resolve([]);
  const filter = q.mailboxes === null ? '' : ` AND mailbox_id IN (${placeholders(q.mailboxes.length)})`;
  return readRows<StoredEvent>(`SELECT seq, envelope FROM events WHERE workspace_id = ?${filter} AND seq > ? ORDER BY seq LIMIT ?`, [
    q.workspaceId,
    ...(q.mailboxes ?? []),
    q.afterSeq,
    q.limit,
  ]);
}
