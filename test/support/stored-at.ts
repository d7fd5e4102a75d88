import type { Knex } from 'knex';
import { EventPartitions, WEEK_MS, weekStart } from '../../src/store/postgres/partitions.ts';

/** A prune cutoff past the epoch's week: it prunes what storeAt(…, 0) aged, on either database (Postgres drops whole weeks). */
export const PAST_EPOCH_WEEK_MS = weekStart(0) + WEEK_MS;

/**
 * Sets the stored_at of a workspace's events (those up to `throughSeq`, or all) to `ms`, as if
 * stored then. On Postgres the rows move to that week's partition, made first.
 */
export async function storeAt(db: Knex, workspaceId: string, ms: number, throughSeq?: number): Promise<void> {
  if (db.client.config.client === 'pg') await new EventPartitions(db).ensureFor(ms);
  const rows = db('events').where({ workspace_id: workspaceId });
  await (throughSeq === undefined ? rows : rows.andWhere('seq', '<=', throughSeq)).update({ stored_at: ms });
}
