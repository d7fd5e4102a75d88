import type { Knex } from 'knex';
import { WEEK_MS, weekStart } from '../weeks.ts';
import { nothing, type KindMigration } from '../migration-steps.ts';

/*
 * Postgres only: `events` becomes a table partitioned by week of stored_at, so retention drops a
 * week at a time instead of deleting rows (EventPartitions, prunePartitions).
 * SQLite keeps its single table: its pruning is bounded already.
 *
 * In place: the table as it is becomes the first partition, FROM MINVALUE to the end of this
 * week (or of the week of its newest row, should a clock have run ahead), keeping its indexes and
 * constraints; nothing is copied. An empty table is dropped instead, and weeks get their
 * partitions as events arrive. Attaching scans the old table once to check its rows fit (under
 * the migration's lock: instances wait for it, see migratePostgres).
 *
 * Also:
 * - feed_counters.last_stored_at: the newest stored_at of each workspace. An append stores
 *   GREATEST(last_stored_at, its clock), so stored_at never goes down along a workspace's seqs,
 *   even between instances whose clocks differ: each partition then holds one run of seqs per
 *   workspace, and dropping the oldest prunes a prefix of each feed.
 * - event_feed_append_crosses_week(): raised by an append that may meet its own event ids in an
 *   older partition than the one it writes (appendOnPostgres), SQLSTATE EF001.
 * - The foreign key events -> workspaces is not carried to the new partitions: an event row is
 *   only ever inserted by the statement that bumps its workspace's counter, whose row has one.
 */
async function upOnPostgres(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE feed_counters ADD COLUMN last_stored_at bigint NOT NULL DEFAULT 0');
  await knex.raw(`UPDATE feed_counters c SET last_stored_at = m.newest
                    FROM (SELECT workspace_id, max(stored_at) AS newest FROM events GROUP BY workspace_id) m
                   WHERE m.workspace_id = c.workspace_id`);
  await knex.raw(`
    CREATE FUNCTION event_feed_append_crosses_week() RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'this append may meet its event ids in an older partition: take the counters first' USING ERRCODE = 'EF001';
    END $$`);

  const { newest } = (await knex.raw('SELECT max(stored_at) AS newest FROM events')).rows[0] as { newest: string | null };
  await knex.raw('ALTER TABLE events RENAME TO events_unpartitioned');
  const indexes = ['events_workspace_mailbox_seq', 'events_workspace_type_seq', 'events_workspace_occurred_seq'];
  for (const index of indexes) await knex.raw(`ALTER INDEX ${index} RENAME TO ${index.replace('events_', 'events_unpartitioned_')}`);
  await knex.raw('CREATE TABLE events (LIKE events_unpartitioned INCLUDING DEFAULTS) PARTITION BY RANGE (stored_at)');
  await knex.raw('CREATE INDEX events_workspace_mailbox_seq ON events (workspace_id, mailbox_id, seq)');
  await knex.raw('CREATE INDEX events_workspace_type_seq ON events (workspace_id, type, seq)');
  await knex.raw('CREATE INDEX events_workspace_occurred_seq ON events (workspace_id, occurred_at_ms, seq)');

  if (newest === null) {
    await knex.raw('DROP TABLE events_unpartitioned');
    return;
  }
  const to = weekStart(Math.max(Date.now(), Number(newest))) + WEEK_MS;
  const name = `events_before_w${new Date(to).toISOString().slice(0, 10).replaceAll('-', '')}`;
  await knex.raw(`ALTER TABLE events_unpartitioned RENAME TO ${name}`);
  await knex.raw(`ALTER TABLE ${name} RENAME CONSTRAINT events_pkey TO ${name}_pkey`);
  await knex.raw(`ALTER TABLE ${name} RENAME CONSTRAINT events_workspace_id_id_unique TO ${name}_workspace_id_id`);
  for (const index of indexes)
    await knex.raw(`ALTER INDEX ${index.replace('events_', 'events_unpartitioned_')} RENAME TO ${index.replace('events_', `${name}_`)}`);
  // The parent's indexes find their equal on the old table and adopt it: nothing is rebuilt.
  await knex.raw(`ALTER TABLE events ATTACH PARTITION ${name} FOR VALUES FROM (MINVALUE) TO (${to})`);
}

async function downOnPostgres(): Promise<void> {
  throw new Error('009_events_partitioned_by_week cannot be undone: restore a backup taken before it');
}

export const up: KindMigration['up'] = { sqlite: nothing, postgres: upOnPostgres };
export const down: KindMigration['down'] = { sqlite: nothing, postgres: downOnPostgres };
