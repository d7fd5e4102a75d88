import type { Knex as Db } from 'knex';

/** Attempts kept per endpoint (list_webhooks shows the 20 most recent; the rest is history for operators). */
export const ATTEMPTS_KEPT_PER_ENDPOINT = 1000;

/**
 * Deletes the pending deliveries of a workspace's pruned events (every seq up to `prunedThrough`):
 * they could only fail as "past retention". Per endpoint, by the (endpoint_id, event_seq) index,
 * in batches, each statement short.
 */
export async function pruneDeliveries(db: Db, workspaceId: string, prunedThrough: number, batchSize: number): Promise<number> {
  if (prunedThrough <= 0) return 0;
  const endpoints: Array<{ id: string }> = await db('webhook_endpoints').select('id').where({ workspace_id: workspaceId });
  let deleted = 0;
  for (const { id } of endpoints) {
    for (;;) {
      const n = await db('webhook_deliveries')
        .whereIn(
          'id',
          db('webhook_deliveries').select('id').where('endpoint_id', id).andWhere('event_seq', '<=', prunedThrough).limit(batchSize),
        )
        .del();
      deleted += n;
      if (n < batchSize) break;
    }
  }
  return deleted;
}

/**
 * Bounds the attempt history: attempts older than the retention cutoff go, and each endpoint keeps
 * its ATTEMPTS_KEPT_PER_ENDPOINT most recent (by the (endpoint_id, id) index), in batches.
 */
export async function pruneAttempts(db: Db, cutoffMs: number, batchSize: number): Promise<number> {
  let deleted = await db('webhook_attempts').where('started_at', '<', cutoffMs).del();
  const endpoints: Array<{ id: string }> = await db('webhook_endpoints').select('id');
  for (const { id } of endpoints) {
    const oldestKept = db('webhook_attempts')
      .select('id')
      .where('endpoint_id', id)
      .orderBy('id', 'desc')
      .offset(ATTEMPTS_KEPT_PER_ENDPOINT - 1)
      .limit(1);
    for (;;) {
      const n = await db('webhook_attempts')
        .whereIn(
          'id',
          db('webhook_attempts').select('id').where('endpoint_id', id).andWhere('id', '<', oldestKept).orderBy('id').limit(batchSize),
        )
        .del();
      deleted += n;
      if (n < batchSize) break;
    }
  }
  return deleted;
}
