import { resolve } from 'node:path';
import type { Knex } from 'knex';
import { createStore } from '../common/store.ts';
import { runMigrations } from '../common/migrate.ts';
import type { DatabaseKind } from '../database-kind.ts';
import { SQLITE_SQL, sqliteAdapter } from './adapter.ts';
import { appendOnSqlite, connectionOf } from './append.ts';
import { sqliteErrors } from './errors.ts';

const SCHEME = 'sqlite:';

/**
 * The file a SQLite URL names (`sqlite:data/x.sqlite`, `sqlite:///abs/x.sqlite`: absolute), or
 * `:memory:`.
 */
function fileOf(url: string): string {
  const rest = url.slice(SCHEME.length).replace(/^\/\//, '');
  return rest === ':memory:' ? rest : resolve(rest);
}

/** SQLite, embedded: `sqlite:<path>` or `sqlite::memory:`, through better-sqlite3. */
export const sqliteKind: DatabaseKind = {
  name: 'sqlite',
  telemetryName: 'sqlite',
  label: 'SQLite',
  schemes: [SCHEME],
  urlForm: 'sqlite:<path>',
  accepts: () => true,
  drivers: ['better-sqlite3'],
  readReplicas: false,
  fileOf,
  open(url, options) {
    if (options.readUrls?.length) throw new Error('DATABASE_READ_URLS names replicas of a Postgres database: DATABASE_URL is SQLite');
    const adapter = sqliteAdapter(fileOf(url), options);
    return createStore(adapter);
  },
  // The single writer needs no lock: its one pooled connection is the one knex migrates on.
  migrate: (knex: Knex) => runMigrations(knex, 'sqlite'),
  appendInTransaction: async (trx, appends, storedAt, sortOut) => appendOnSqlite(await connectionOf(trx), appends, storedAt, sortOut),
  sql: SQLITE_SQL,
  errors: sqliteErrors,
};
