import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('settings', (t) => {
    t.text('key').primary();
    t.text('value').notNullable();
  });

  await knex.schema.createTable('workspaces', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.boolean('verified').notNullable().defaultTo(false);
    t.bigInteger('created_at').notNullable();
  });

  // One row per workspace: its row lock orders appends (see the write path's notes beside inWorkspaceOrder).
  await knex.schema.createTable('feed_counters', (t) => {
    t.text('workspace_id').primary().references('workspaces.id');
    t.bigInteger('last_seq').notNullable().defaultTo(0);
  });

  await knex.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id').index();
    t.text('secret_sha256').notNullable();
    t.text('permissions').notNullable(); // comma-separated: read,write,admin
    t.text('mailboxes'); // JSON array of mailbox ids; null = every mailbox
    t.text('label');
    t.bigInteger('created_at').notNullable();
    t.bigInteger('revoked_at');
  });

  await knex.schema.createTable('events', (t) => {
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.bigInteger('seq').notNullable();
    t.text('id').notNullable();
    t.text('type').notNullable();
    t.text('mailbox_id');
    t.bigInteger('stored_at').notNullable();
    // Read by nothing now: a retry is compared with the stored envelope (sameEvent), and new
    // rows leave it NULL. Older rows may hold a hash of their first request.
    t.text('idempotency_hash');
    // The envelope exactly as served: spliced into responses without parse/stringify.
    t.text('envelope').notNullable();
    t.primary(['workspace_id', 'seq']);
    t.unique(['workspace_id', 'id']);
    // Serves restricted keys: per-mailbox keyset scans.
    t.index(['workspace_id', 'mailbox_id', 'seq'], 'events_workspace_mailbox_seq');
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['events', 'api_keys', 'feed_counters', 'workspaces', 'settings']) {
    await knex.schema.dropTableIfExists(table);
  }
}
