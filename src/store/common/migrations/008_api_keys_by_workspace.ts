import type { Knex } from 'knex';

/*
 * list_keys pages a workspace's keys in id order, and create_key counts its active keys. Revoked
 * keys stay (their ids and dates are the record of what existed), so a workspace that created and
 * revoked many keys would make both read all of them: two indexes make a page read only its rows
 * and the count read only active keys (bounded by create_key's cap). Partial indexes work on both
 * SQLite and Postgres. The index on workspace_id alone (migration 001) goes: the first one covers
 * it, and SQLite's planner preferred it for the count, reading every key of the workspace.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX api_keys_workspace_id_order ON api_keys (workspace_id, id)');
  await knex.raw('CREATE INDEX api_keys_active_workspace_id_order ON api_keys (workspace_id, id) WHERE revoked_at IS NULL');
  await knex.raw('DROP INDEX api_keys_workspace_id_index');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('CREATE INDEX api_keys_workspace_id_index ON api_keys (workspace_id)');
  await knex.raw('DROP INDEX api_keys_active_workspace_id_order');
  await knex.raw('DROP INDEX api_keys_workspace_id_order');
}
