import type { Knex } from 'knex';

/*
 * erase_person's log and progress: one row per erasure of one or several addresses from one
 * workspace. The addresses are kept only as keyed hashes (address_hashes, what the log shows), and
 * sealed (encrypted with a key derived from the server's secret) in sealed_addresses while the
 * erasure runs, so that it resumes after a restart; completing it clears them. The runner walks
 * the workspace's seqs from from_seq to through_seq (the head when it was asked) in bounded
 * batches, cursor_seq being the last one done; one instance at a time holds its lease.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('erasures', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable();
    t.text('status').notNullable(); // pending | running | completed
    t.text('address_hashes').notNullable(); // JSON array of hex HMAC-SHA256, sorted
    t.text('request_key').notNullable(); // the hashes joined: the same request finds its erasure
    t.text('sealed_addresses'); // null once completed
    t.text('requested_by').notNullable(); // the key's id
    t.bigInteger('requested_at').notNullable();
    t.bigInteger('completed_at');
    t.bigInteger('from_seq').notNullable();
    t.bigInteger('through_seq').notNullable();
    t.bigInteger('cursor_seq').notNullable();
    t.bigInteger('events_erased').notNullable().defaultTo(0);
    t.text('lease_owner');
    t.bigInteger('lease_until');
    t.bigInteger('updated_at').notNullable();
    t.index(['workspace_id', 'request_key'], 'erasures_by_request');
    t.index(['workspace_id', 'requested_at'], 'erasures_by_workspace');
    t.index(['updated_at'], 'erasures_by_update');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('erasures');
}
