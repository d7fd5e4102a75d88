import type { Knex } from 'knex';
import type { Db } from './db.ts';
import * as initial from './migrations/001_initial.ts';

// Migrations are imported modules (no loader needed for the knex CLI); names are stable forever.
const migrations: Record<string, Knex.Migration> = {
  '001_initial': initial,
};

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

/** Applies pending migrations; returns the names applied. Safe to run from several instances at once (knex locks). */
export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource: source })) as [number, string[]];
  return applied;
}
