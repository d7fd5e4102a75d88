import type { Knex } from 'knex';
import type { PruneResult } from '../port.ts';
import { postgresRows } from './rows.ts';
import { pruneAttempts, pruneDeliveries } from '../common/webhook-pruning.ts';
import { LOCK_NOT_AVAILABLE, sqlState } from './write-outcome.ts';
import { type EventPartition, listPartitions, PARTITIONS_LOCK } from './partitions.ts';

/** How long dropping a partition waits for `events` (every statement on it holds it a moment). */
const DROP_LOCK_TIMEOUT_MS = 1000;
/** Tries per partition when that wait runs out, a little further apart each time. */
const DROP_ATTEMPTS = 5;

/**
 * Store.pruneAll on Postgres: drops, oldest first, every partition of `events` whose every row
 * is past the cutoff (its upper bound is at or before it), so events are kept between the
 * retention period and that plus a week. Then the webhook deliveries of what was dropped and the
 * attempt history past retention go, as on SQLite (pruneDeliveries, pruneAttempts).
 *
 * One partition per transaction: its rows are locked against writes, the watermarks rise to the
 * highest seq it holds per workspace and per (workspace, mailbox) (prunedThrough reads
 * them), and the table is dropped; all at commit or none. Each partition holds one run of seqs
 * per workspace (migration 009) and the older ones are gone, so "pruned through N" keeps meaning
 * "every seq ≤ N is gone and every seq > N is still there". Those highest seqs come from index
 * probes (a skip scan per workspace and per mailbox), not from reading the rows.
 */
export async function prunePartitions(knex: Knex, cutoffMs: number, batchSize: number): Promise<PruneResult[]> {
  const pruned = new Map<string, PruneResult>();
  for (const partition of await listPartitions(knex)) {
    if (partition.to > cutoffMs) break;
    for (const result of await dropPartition(knex, partition)) {
      const before = pruned.get(result.workspaceId);
      pruned.set(result.workspaceId, before ? { ...result, deleted: before.deleted + result.deleted } : result);
    }
  }
  for (const result of pruned.values()) await pruneDeliveries(knex, result.workspaceId, result.prunedThrough, batchSize);
  await pruneAttempts(knex, cutoffMs, batchSize);
  return [...pruned.values()];
}

/** Drops one partition with its watermarks, trying again a few times when `events` stays busy. */
async function dropPartition(knex: Knex, partition: EventPartition): Promise<PruneResult[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await knex.transaction((trx) => dropInTransaction(trx, partition.name));
    } catch (err) {
      if (sqlState(err) !== LOCK_NOT_AVAILABLE || attempt >= DROP_ATTEMPTS) throw err;
      await new Promise((done) => setTimeout(done, attempt * 200));
    }
  }
}

async function dropInTransaction(trx: Knex.Transaction, name: string): Promise<PruneResult[]> {
  await trx.raw(`SET LOCAL lock_timeout = ${DROP_LOCK_TIMEOUT_MS}`);
  await trx.raw('SELECT pg_advisory_xact_lock(?)', [PARTITIONS_LOCK]);
  // Another instance may have dropped it meanwhile.
  if (!(await listPartitions(trx)).some((p) => p.name === name)) return [];
  const table = `"${name}"`;
  // No write may land in it from here on (none should: its week is past retention).
  await trx.raw(`LOCK TABLE ${table} IN SHARE MODE`);
  const feeds = await postgresRows<{ workspace_id: string; first_seq: string; last_seq: string }>(
    trx,
    `WITH RECURSIVE feeds AS (
       (SELECT workspace_id FROM ${table} ORDER BY workspace_id LIMIT 1)
       UNION ALL
       SELECT (SELECT e.workspace_id FROM ${table} e WHERE e.workspace_id > feeds.workspace_id ORDER BY e.workspace_id LIMIT 1)
         FROM feeds WHERE feeds.workspace_id IS NOT NULL
     ), ranges AS (
       SELECT workspace_id,
              (SELECT min(seq) FROM ${table} e WHERE e.workspace_id = feeds.workspace_id) AS first_seq,
              (SELECT max(seq) FROM ${table} e WHERE e.workspace_id = feeds.workspace_id) AS last_seq
         FROM feeds WHERE workspace_id IS NOT NULL
     ), raised AS (
       INSERT INTO feed_retention (workspace_id, pruned_through)
       SELECT workspace_id, last_seq FROM ranges ORDER BY workspace_id
       ON CONFLICT (workspace_id) DO UPDATE SET pruned_through = GREATEST(feed_retention.pruned_through, excluded.pruned_through)
     )
     SELECT workspace_id, first_seq, last_seq FROM ranges`,
    [],
  );
  await trx.raw(
    `WITH RECURSIVE boxes AS (
       (SELECT workspace_id, mailbox_id FROM ${table} WHERE mailbox_id IS NOT NULL ORDER BY workspace_id, mailbox_id LIMIT 1)
       UNION ALL
       SELECT next.workspace_id, next.mailbox_id FROM boxes, LATERAL (
         SELECT e.workspace_id, e.mailbox_id FROM ${table} e
          WHERE (e.workspace_id, e.mailbox_id) > (boxes.workspace_id, boxes.mailbox_id) AND e.mailbox_id IS NOT NULL
          ORDER BY e.workspace_id, e.mailbox_id LIMIT 1) next
     )
     INSERT INTO feed_retention_mailboxes (workspace_id, mailbox_id, pruned_through)
     SELECT workspace_id, mailbox_id,
            (SELECT max(seq) FROM ${table} e WHERE e.workspace_id = boxes.workspace_id AND e.mailbox_id = boxes.mailbox_id)
       FROM boxes ORDER BY workspace_id, mailbox_id
     ON CONFLICT (workspace_id, mailbox_id) DO UPDATE
       SET pruned_through = GREATEST(feed_retention_mailboxes.pruned_through, excluded.pruned_through)`,
  );
  await trx.raw(`DROP TABLE ${table}`);
  return feeds.map((row) => ({
    workspaceId: row.workspace_id,
    deleted: Number(row.last_seq) - Number(row.first_seq) + 1,
    prunedThrough: Number(row.last_seq),
  }));
}
