import type { Knex } from 'knex';
import type { PerKind } from '../../database-kind.ts';
import type { KindMigration } from '../migration-steps.ts';

/** An envelope's occurred_at in epoch milliseconds, in each database's SQL. */
const OCCURRED_AT_MS: PerKind<string> = {
  postgres: `(extract(epoch from (envelope::json->>'occurred_at')::timestamptz) * 1000)::bigint`,
  sqlite: `CAST(ROUND((julianday(json_extract(envelope, '$.occurred_at')) - 2440587.5) * 86400000) AS INTEGER)`,
};

/** The same on every database but for OCCURRED_AT_MS. */
async function upWith(knex: Knex, occurredAtMs: string): Promise<void> {
  // list_events filters on occurred_at; keep it as a number beside the envelope text.
  await knex.schema.alterTable('events', (t) => {
    t.bigInteger('occurred_at_ms');
  });
  await knex.raw(`UPDATE events SET occurred_at_ms = ${occurredAtMs} WHERE occurred_at_ms IS NULL`);

  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.text('id').primary();
    t.text('workspace_id').notNullable().references('workspaces.id');
    t.text('url').notNullable();
    t.text('event_types').notNullable(); // JSON array; [] = every type
    t.boolean('enabled').notNullable();
    t.text('disabled_reason');
    t.text('secret').notNullable(); // whsec_…: needed in clear to sign
    t.bigInteger('created_at').notNullable();
    t.bigInteger('updated_at').notNullable();
    // One dispatcher at a time per endpoint (across instances): whoever holds an unexpired lease.
    t.text('lease_owner');
    t.bigInteger('lease_until');
    t.unique(['workspace_id', 'url']);
  });

  // The outbox: one row per (endpoint, event), written in the event's own transaction.
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.increments('id').primary();
    t.text('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.text('workspace_id').notNullable();
    t.bigInteger('event_seq').notNullable();
    t.text('event_id').notNullable();
    t.integer('attempts').notNullable().defaultTo(0);
    t.bigInteger('next_attempt_at').notNullable();
    t.bigInteger('created_at').notNullable();
    t.index(['endpoint_id', 'next_attempt_at'], 'webhook_deliveries_due');
  });

  await knex.schema.createTable('webhook_attempts', (t) => {
    t.increments('id').primary();
    t.text('endpoint_id').notNullable().references('webhook_endpoints.id').onDelete('CASCADE');
    t.text('event_id').notNullable();
    t.integer('attempt').notNullable();
    t.bigInteger('started_at').notNullable();
    t.integer('status');
    t.integer('latency_ms').notNullable();
    t.text('error');
    t.text('outcome').notNullable();
    t.bigInteger('next_retry_at');
    t.index(['endpoint_id', 'id'], 'webhook_attempts_recent');
  });
}

async function downOn(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('webhook_attempts');
  await knex.schema.dropTableIfExists('webhook_deliveries');
  await knex.schema.dropTableIfExists('webhook_endpoints');
  await knex.schema.alterTable('events', (t) => t.dropColumn('occurred_at_ms'));
}

export const up: KindMigration['up'] = {
  sqlite: (knex) => upWith(knex, OCCURRED_AT_MS.sqlite),
  postgres: (knex) => upWith(knex, OCCURRED_AT_MS.postgres),
};
export const down: KindMigration['down'] = { sqlite: downOn, postgres: downOn };
