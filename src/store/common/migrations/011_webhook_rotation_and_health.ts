import type { Knex } from 'knex';

/*
 * What webhooks an integrator can debug need of the endpoint row:
 * - previous_secret / previous_secret_expires_at: the secret a rotation replaced, still signing
 *   (second `v1,` signature) until then, so receivers can switch secrets without losing a delivery;
 * - disabled_at: when the service disabled the endpoint (disabled_reason says why), backfilled from
 *   updated_at for endpoints already disabled by the service;
 * - last_tested_at: test_webhook's per-endpoint cooldown, kept in the row so that every instance
 *   sees it (a conditional UPDATE claims the slot).
 * The success rate list_webhooks shows reads the last attempts through the existing
 * (endpoint_id, id) index of webhook_attempts: nothing to add there.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.text('previous_secret');
    t.bigInteger('previous_secret_expires_at');
    t.bigInteger('disabled_at');
    t.bigInteger('last_tested_at');
  });
  await knex('webhook_endpoints')
    .whereNotNull('disabled_reason')
    .update({ disabled_at: knex.ref('updated_at') });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.dropColumn('last_tested_at');
    t.dropColumn('disabled_at');
    t.dropColumn('previous_secret_expires_at');
    t.dropColumn('previous_secret');
  });
}
