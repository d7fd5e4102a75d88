import type { Knex } from 'knex';
import type { KindName } from '../database-kind.ts';
import { migrationOn, type KindMigration } from './migration-steps.ts';

import * as initial from './migrations/001_initial.ts';
import * as retention from './migrations/002_retention.ts';
import * as webhooksAndSearch from './migrations/003_webhooks_and_search.ts';
import * as listEventsIndex from './migrations/004_list_events_index.ts';
import * as keyChangeNotify from './migrations/005_key_change_notify.ts';
import * as webhookFairDispatchAndLimits from './migrations/006_webhook_fair_dispatch_and_limits.ts';
import * as listEventsScanIndex from './migrations/007_list_events_scan_index.ts';
import * as apiKeysByWorkspace from './migrations/008_api_keys_by_workspace.ts';
import * as eventsPartitionedByWeek from './migrations/009_events_partitioned_by_week.ts';
import * as sqliteNewestStoredAt from './migrations/010_sqlite_newest_stored_at.ts';
import * as webhookRotationAndHealth from './migrations/011_webhook_rotation_and_health.ts';
import * as webhookTestCooldowns from './migrations/012_webhook_test_cooldowns.ts';
import * as oauth from './migrations/013_oauth.ts';
import * as erasures from './migrations/014_erasures.ts';
import * as webhookDeliveryTraceContext from './migrations/015_webhook_delivery_trace_context.ts';
import * as oauthAddresses from './migrations/016_oauth_addresses.ts';
import * as oauthIssuers from './migrations/017_oauth_issuers.ts';

// Migrations are imported modules (no loader needed for the knex CLI); names are stable forever:
// never rename or reorder one (existing databases are migrated by name).
const migrations: Record<string, Knex.Migration | KindMigration> = {
  '001_initial': initial,
  '002_retention': retention,
  '003_webhooks_and_search': webhooksAndSearch,
  '004_list_events_index': listEventsIndex,
  '005_key_change_notify': keyChangeNotify,
  '006_webhook_fair_dispatch_and_limits': webhookFairDispatchAndLimits,
  '007_list_events_scan_index': listEventsScanIndex,
  '008_api_keys_by_workspace': apiKeysByWorkspace,
  '009_events_partitioned_by_week': eventsPartitionedByWeek,
  '010_sqlite_newest_stored_at': sqliteNewestStoredAt,
  '011_webhook_rotation_and_health': webhookRotationAndHealth,
  '012_webhook_test_cooldowns': webhookTestCooldowns,
  '013_oauth': oauth,
  '014_erasures': erasures,
  '015_webhook_delivery_trace_context': webhookDeliveryTraceContext,
  '016_oauth_addresses': oauthAddresses,
  '017_oauth_issuers': oauthIssuers,
};

/** The migrations as knex runs them on a database of `kind` (a KindMigration's step for it). */
export const migrationSource = (kind: KindName): Knex.MigrationSource<string> => ({
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrationOn(migrations[name]!, kind),
});

/** Applies pending migrations with knex's migrator; returns the names applied (callers serialize instances: Adapter.migrate). */
export async function runMigrations(db: Knex, kind: KindName): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource: migrationSource(kind) })) as [number, string[]];
  return applied;
}
