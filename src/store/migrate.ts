import type { Knex } from 'knex';
import { dbKind, type Db } from './db.ts';
import * as initial from './migrations/001_initial.ts';
import * as retention from './migrations/002_retention.ts';
import * as webhooksAndSearch from './migrations/003_webhooks_and_search.ts';
import * as listEventsIndex from './migrations/004_list_events_index.ts';
import * as keyChangeNotify from './migrations/005_key_change_notify.ts';
import * as webhookFairDispatchAndLimits from './migrations/006_webhook_fair_dispatch_and_limits.ts';
import * as listEventsScanIndex from './migrations/007_list_events_scan_index.ts';
import * as apiKeysByWorkspace from './migrations/008_api_keys_by_workspace.ts';

// Migrations are imported modules (no loader needed for the knex CLI); names are stable forever.
const migrations: Record<string, Knex.Migration> = {
  '001_initial': initial,
  '002_retention': retention,
  '003_webhooks_and_search': webhooksAndSearch,
  '004_list_events_index': listEventsIndex,
  '005_key_change_notify': keyChangeNotify,
  '006_webhook_fair_dispatch_and_limits': webhookFairDispatchAndLimits,
  '007_list_events_scan_index': listEventsScanIndex,
  '008_api_keys_by_workspace': apiKeysByWorkspace,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

// Arbitrary, fixed: the advisory lock every event-feed instance takes around migrations.
const MIGRATION_LOCK = 0x65766e74;

/**
 * Applies pending migrations; returns the names applied. Safe when several instances start at
 * once: knex's own lock is taken only after it creates its bookkeeping tables, which races on a
 * fresh database, so on Postgres the whole run is serialized by an advisory lock. (SQLite's
 * single writer needs no help: its one pooled connection is used by knex itself.)
 */
export async function migrateLatest(db: Db): Promise<string[]> {
  if (dbKind(db) === 'sqlite') return runMigrations(db);
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK]);
    return runMigrations(db);
  });
}

async function runMigrations(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
  return applied;
}
