import type { Knex } from 'knex';
import type { PruneResult } from '../port.ts';
import { placeholders, type SqlPieces } from './sql.ts';
import { pruneAttempts, pruneDeliveries } from './webhook-pruning.ts';

type Db = Knex;
/** Rows of a small read (Adapter.readRows, or a transaction's own). */
type ReadRows = <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>;
const inTransaction =
  (sql: SqlPieces, trx: Knex.Transaction): ReadRows =>
  (text, bindings) =>
    sql.rows(trx, text, bindings);

/** The highest seq pruned from a workspace's feed (0 when nothing was): every seq up to it is gone. */
export async function prunedThrough(readRows: ReadRows, workspaceId: string): Promise<number> {
  const [row] = await readRows<{ pruned_through: number }>('SELECT pruned_through FROM feed_retention WHERE workspace_id = ?', [
    workspaceId,
  ]);
  return Number(row?.pruned_through ?? 0);
}

/** The highest seq pruned among these mailboxes' events: what a restricted key may have missed. */
export async function prunedThroughMailboxes(readRows: ReadRows, workspaceId: string, mailboxes: readonly string[]): Promise<number> {
  if (mailboxes.length === 0) return 0;
  const { sql, bindings } = mailboxesWatermark(workspaceId, mailboxes);
  const [row] = await readRows<{ through: number | null }>(sql, bindings);
  return Number(row?.through ?? 0);
}

/** The statement of prunedThroughMailboxes (one row, `through`, null when nothing was pruned), to embed in a page's. */
export function mailboxesWatermark(workspaceId: string, mailboxes: readonly string[]): { sql: string; bindings: Knex.Value[] } {
  return {
    sql: `SELECT MAX(pruned_through) AS through FROM feed_retention_mailboxes WHERE workspace_id = ? AND mailbox_id IN (${placeholders(mailboxes.length)})`,
    bindings: [workspaceId, ...mailboxes],
  };
}

/**
 * Deletes a workspace's events stored before `cutoffMs`, oldest first, in batches of `batchSize`,
 * each in its own short transaction, so writers and readers are never held up for long. Only a
 * prefix of the feed is ever deleted, and the watermarks move in the same transaction as the rows,
 * so "pruned through N" always means "every seq ≤ N is gone and every seq > N is still there".
 */
export async function pruneWorkspace(
  db: Db,
  sql: SqlPieces,
  workspaceId: string,
  cutoffMs: number,
  batchSize: number,
): Promise<PruneResult> {
  let deleted = 0;
  for (;;) {
    const batch = await db.transaction(async (trx) => {
      const from = await prunedThrough(inTransaction(sql, trx), workspaceId);
      const rows: Array<{ seq: number; mailbox_id: string | null; stored_at: number }> = await trx('events')
        .select('seq', 'mailbox_id', 'stored_at')
        .where('workspace_id', workspaceId)
        .andWhere('seq', '>', from)
        .orderBy('seq')
        .limit(batchSize);
      const expired = rows.slice(0, firstNotBefore(rows, cutoffMs));
      if (expired.length === 0) return { count: 0, through: from, full: false };
      const through = Number(expired.at(-1)!.seq);
      await trx('events').where('workspace_id', workspaceId).andWhere('seq', '>', from).andWhere('seq', '<=', through).del();
      await raiseWatermark(trx, sql.greatest, 'feed_retention', { workspace_id: workspaceId }, ['workspace_id'], through);
      const perMailbox = new Map<string, number>();
      for (const row of expired) if (row.mailbox_id !== null) perMailbox.set(row.mailbox_id, Number(row.seq));
      for (const [mailbox, seq] of perMailbox) {
        await raiseWatermark(
          trx,
          sql.greatest,
          'feed_retention_mailboxes',
          { workspace_id: workspaceId, mailbox_id: mailbox },
          ['workspace_id', 'mailbox_id'],
          seq,
        );
      }
      return { count: expired.length, through, full: expired.length === batchSize };
    });
    deleted += batch.count;
    if (!batch.full) return { workspaceId, deleted, prunedThrough: batch.through };
  }
}

/** Prunes every workspace; returns what was deleted where. */
export async function pruneAll(db: Db, sql: SqlPieces, cutoffMs: number, batchSize: number): Promise<PruneResult[]> {
  const workspaces: Array<{ id: string }> = await db('workspaces').select('id').orderBy('id');
  const results: PruneResult[] = [];
  for (const { id } of workspaces) results.push(await pruneWorkspace(db, sql, id, cutoffMs, batchSize));
  // The webhook deliveries of pruned events go with them; the attempt history is bounded by age and per endpoint.
  for (const result of results) await pruneDeliveries(db, result.workspaceId, result.prunedThrough, batchSize);
  await pruneAttempts(db, cutoffMs, batchSize);
  return results;
}

const firstNotBefore = (rows: Array<{ stored_at: number }>, cutoffMs: number) => {
  const index = rows.findIndex((row) => Number(row.stored_at) >= cutoffMs);
  return index === -1 ? rows.length : index;
};

/** Upserts a watermark, never lowering it (two pruners may race; the higher one wins). */
async function raiseWatermark(
  trx: Knex.Transaction,
  greatest: string,
  table: string,
  key: Record<string, string>,
  conflict: string[],
  seq: number,
) {
  await trx(table)
    .insert({ ...key, pruned_through: seq })
    .onConflict(conflict)
    .merge({ pruned_through: trx.raw(`${greatest}(${table}.pruned_through, excluded.pruned_through)`) });
}
