import type { Knex } from 'knex';
import { nothing, type KindMigration } from '../migration-steps.ts';

/*
 * Postgres only: every update or delete of an api_keys row notifies event_feed_keys with the key's id,
 * at commit, so every instance forgets a key it had verified as soon as it is revoked, whoever
 * revoked it (an instance, the CLI, an operator's SQL). A trigger rather than a NOTIFY in
 * revokeKey: no way of changing a key can forget to announce it. SQLite keeps no verified key.
 */
async function upOnPostgres(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION event_feed_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('event_feed_keys', OLD.id);
      RETURN NULL;
    END $$`);
  await knex.raw(
    'CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION event_feed_key_changed()',
  );
}

async function downOnPostgres(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER api_keys_changed ON api_keys');
  await knex.raw('DROP FUNCTION event_feed_key_changed()');
}

export const up: KindMigration['up'] = { sqlite: nothing, postgres: upOnPostgres };
export const down: KindMigration['down'] = { sqlite: nothing, postgres: downOnPostgres };
