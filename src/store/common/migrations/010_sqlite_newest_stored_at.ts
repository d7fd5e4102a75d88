import type { Knex } from 'knex';
import { nothing, type KindMigration } from '../migration-steps.ts';

/*
 * SQLite only (Postgres has it since 009): feed_counters.last_stored_at, the newest stored_at of
 * each workspace. An append stores MAX(last_stored_at, its clock) (appendOnSqlite), so stored_at
 * never goes down along a workspace's seqs, as on Postgres: several processes share a file, and
 * one that read its clock before waiting for the write lock commits after another that read a
 * later one (and a clock may step back). feed_cursor's binary search over seqs by stored_at
 * (positionAt) relies on that order.
 *
 * Filled with each workspace's newest stored_at (one pass over `events`, once). Rows stored
 * before this migration keep the order they had: at worst a few out of order by the time a
 * process waited for the lock. A workspace whose events were all pruned gets 0, "unknown"
 * (assertTimeNotExpired then judges a time by the retention period alone).
 */
async function upOnSqlite(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE feed_counters ADD COLUMN last_stored_at bigint NOT NULL DEFAULT 0');
  await knex.raw(
    `UPDATE feed_counters SET last_stored_at = COALESCE((SELECT MAX(stored_at) FROM events WHERE events.workspace_id = feed_counters.workspace_id), 0)`,
  );
}

async function downOnSqlite(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE feed_counters DROP COLUMN last_stored_at');
}

export const up: KindMigration['up'] = { sqlite: upOnSqlite, postgres: nothing };
export const down: KindMigration['down'] = { sqlite: downOnSqlite, postgres: nothing };
