import type { Knex } from 'knex';

/*
 * test_webhook's cooldown by workspace and URL rather than on the endpoint row: removing an
 * endpoint and setting it again made a new row, and with it a new cooldown, so an admin key could
 * have the service POST to one URL as fast as it could re-create it. A row per (workspace, URL)
 * tested lately, claimed by one conditional upsert (instances agree); rows past their cooldown are
 * deleted as the workspace tests again. The endpoints' last_tested_at (migration 011) is left unused.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_test_cooldowns', (t) => {
    t.text('workspace_id').notNullable();
    // The URL's SHA-256 (hex): a bounded key whatever the URL's length.
    t.text('url_sha256').notNullable();
    t.bigInteger('tested_at').notNullable();
    t.primary(['workspace_id', 'url_sha256']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_test_cooldowns');
}
