import type { Knex } from 'knex';

/*
 * When each endpoint was last leased by a dispatcher: free slots go round-robin, to the workspace
 * (and, within it, the endpoint) served least recently (leaseEndpoints).
 *
 * One pending delivery per (endpoint, event): redeliver_webhook inserts with ON CONFLICT DO NOTHING
 * against this index, so an event already pending for an endpoint is not queued again, however
 * often it is asked. Duplicates that earlier versions let in are removed first, keeping the oldest
 * row of each pair (the one that may already carry attempts). The index also serves the
 * dispatcher's read of an endpoint's deliveries in event order, and retention's deletion of the
 * deliveries of pruned events.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_endpoints', (t) => {
    t.bigInteger('last_leased_at');
  });
  await knex.raw(`
    DELETE FROM webhook_deliveries
     WHERE id NOT IN (SELECT MIN(id) FROM webhook_deliveries GROUP BY endpoint_id, event_seq)`);
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.unique(['endpoint_id', 'event_seq'], { indexName: 'webhook_deliveries_endpoint_event' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropUnique(['endpoint_id', 'event_seq'], 'webhook_deliveries_endpoint_event');
  });
  await knex.schema.alterTable('webhook_endpoints', (t) => t.dropColumn('last_leased_at'));
}
