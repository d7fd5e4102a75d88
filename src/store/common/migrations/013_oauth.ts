import type { Knex } from 'knex';

/*
 * OAuth 2.1 for MCP assistants (src/oauth/): the service is its own authorization server.
 * - oauth_clients: clients registered dynamically (RFC 7591), as the metadata they registered
 *   (never a secret: every client is public, PKCE-only). `used_at` is set when a person first
 *   consents to one; registrations never used are the first to go when the table is full.
 *   Clients named by a metadata document URL are fetched, not stored.
 * - oauth_requests: authorization requests waiting for the person's consent, by the SHA-256 of
 *   their handle (the consent form's hidden field) and of the browser's cookie; short-lived.
 * - oauth_grants: one row per consent: its authorization code, then its one live access token and
 *   its refresh token, all stored as SHA-256 hashes. A refresh replaces both (rotation); the grant
 *   is the token family a reused code or refresh token revokes.
 * Times are milliseconds, as everywhere else.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('oauth_clients', (t) => {
    t.text('client_id').primary();
    t.text('metadata').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('used_at');
    t.index(['created_at'], 'oauth_clients_created_at');
  });
  await knex.schema.createTable('oauth_requests', (t) => {
    t.text('handle_sha256').primary();
    t.text('browser_sha256').notNullable();
    t.text('client_id').notNullable();
    t.text('redirect_uri').notNullable();
    t.integer('redirect_uri_given').notNullable();
    t.text('code_challenge').notNullable();
    t.text('state');
    t.text('scope').notNullable();
    t.text('resource').notNullable();
    t.text('key_id');
    t.integer('key_attempts').notNullable().defaultTo(0);
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.index(['expires_at'], 'oauth_requests_expires_at');
  });
  await knex.schema.createTable('oauth_grants', (t) => {
    t.text('id').primary();
    t.text('client_id').notNullable();
    t.text('key_id').notNullable();
    t.text('scope').notNullable();
    t.text('resource').notNullable();
    t.bigInteger('created_at').notNullable();
    t.bigInteger('expires_at').notNullable();
    t.text('code_sha256').notNullable().unique('oauth_grants_code_sha256');
    t.text('code_challenge').notNullable();
    t.text('redirect_uri').notNullable();
    t.integer('redirect_uri_given').notNullable();
    t.bigInteger('code_expires_at').notNullable();
    t.bigInteger('code_used_at');
    t.text('access_sha256').unique('oauth_grants_access_sha256');
    t.bigInteger('access_expires_at');
    t.text('refresh_sha256');
    t.bigInteger('refresh_expires_at');
    t.bigInteger('revoked_at');
    t.index(['key_id', 'created_at'], 'oauth_grants_key_id_created_at');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('oauth_grants');
  await knex.schema.dropTable('oauth_requests');
  await knex.schema.dropTable('oauth_clients');
}
