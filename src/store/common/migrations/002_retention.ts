import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  // Kept apart from feed_counters so pruning never waits on (or holds up) the appenders' row lock.
  await knex.schema.createTable('feed_retention', (t) => {
    t.text('workspace_id').primary().references('workspaces.id');
    t.bigInteger('pruned_through').notNullable().defaultTo(0); // every seq ≤ this is gone
  });
  // Per mailbox, so a restricted key is told "expired" only when one of *its* events was pruned.
  await knex.schema.createTable('feed_retention_mailboxes', (t) => {
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('mailbox_id').notNullable();
    t.bigInteger('pruned_through').notNullable();
    t.primary(['workspace_id', 'mailbox_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('feed_retention_mailboxes');
  await knex.schema.dropTableIfExists('feed_retention');
}
