import type { Knex } from 'knex';

/*
 * Indexes for list_events (see the plans searchEvents runs: rangeCandidates, keyedCandidates):
 * - (workspace_id, type, seq): "the latest bounces" reads the newest events of each type asked for
 *   and merges them, so a rare type costs what it returns instead of a backward scan of the whole
 *   feed (the last page of a rare type would otherwise read every event of the workspace).
 * - (workspace_id, occurred_at_ms, seq): a time window is found by range, index-only (seq is in
 *   the index for the keyset test), so "the last hour" never scans the rest of the feed to prove
 *   nothing older matches; occurred_at is set by the client and does not follow seq.
 * Mailbox filters reuse events_workspace_mailbox_seq (001), newest first. Each index costs every
 * append one more b-tree insert; these two are what the filters need and nothing more.
 * Note: CREATE INDEX (not CONCURRENTLY, which cannot run in the migration's transaction) blocks
 * appends on Postgres while it builds, in proportion to the table's size.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.index(['workspace_id', 'type', 'seq'], 'events_workspace_type_seq');
    t.index(['workspace_id', 'occurred_at_ms', 'seq'], 'events_workspace_occurred_seq');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('events', (t) => {
    t.dropIndex(['workspace_id', 'type', 'seq'], 'events_workspace_type_seq');
    t.dropIndex(['workspace_id', 'occurred_at_ms', 'seq'], 'events_workspace_occurred_seq');
  });
}
