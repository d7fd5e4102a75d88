import type { Knex } from 'knex';

/*
 * OAuth state nobody authenticated is bounded per client address as well as in all (issue 41 #3):
 * `address` is who asked (the service's client address: IPv4 as is, IPv6 by its /64), on a
 * registered client and on a pending authorization request, each indexed with the time the caps
 * count by. Rows from before have none: they count only against the global caps, and go as usual.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.text('address');
    t.index(['address', 'created_at'], 'oauth_clients_address_created_at');
  });
  await knex.schema.alterTable('oauth_requests', (t) => {
    t.text('address');
    t.index(['address', 'expires_at'], 'oauth_requests_address_expires_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_requests', (t) => {
    t.dropIndex(['address', 'expires_at'], 'oauth_requests_address_expires_at');
    t.dropColumn('address');
  });
  await knex.schema.alterTable('oauth_clients', (t) => {
    t.dropIndex(['address', 'created_at'], 'oauth_clients_address_created_at');
    t.dropColumn('address');
  });
}
