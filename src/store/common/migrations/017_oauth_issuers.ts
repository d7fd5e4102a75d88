import type { Knex } from 'knex';

/*
 * A grant remembers the authorization server that issued it (issue 41 #7): `issuer` on
 * oauth_grants, the issuer URL of the deployment whose consent made the code (its refresh tokens
 * are the same row's). The token endpoint redeems a code or refreshes a token only when it is that
 * issuer: two deployments on one database (different PUBLIC_URLs) no longer redeem each other's
 * grants. Grants from before have none and are taken by any issuer, as before.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_grants', (t) => {
    t.text('issuer');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_grants', (t) => {
    t.dropColumn('issuer');
  });
}
