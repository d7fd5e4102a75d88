import { resolve } from 'node:path';
import type { Knex } from 'knex';
import { createStore } from './common/store.ts';
import type { FirstSeqs, SortOutStored, Store, WorkspaceAppend } from './port.ts';
import { appendOnPostgres } from './postgres/append.ts';
import { HEADS_CHANNEL } from './postgres/changes.ts';
import { EventPartitions } from './postgres/partitions.ts';
import { migratePostgres, postgresAdapter } from './postgres/adapter.ts';
import { runMigrations } from './common/migrate.ts';
import { appendOnSqlite, connectionOf } from './sqlite/append.ts';
import { sqliteAdapter } from './sqlite/adapter.ts';

/*
 * The one place where a database URL's scheme or a knex driver is read: everything else speaks
 * to the Store (port.ts). A third database is a folder beside sqlite/ and postgres/ and a line in
 * each table below.
 */

export interface OpenOptions {
  /** Postgres: how long a query may go unanswered; 0 lifts it (migrations, the CLI). */
  queryTimeoutMs?: number;
  /** SQLite: checkpoint the WAL off the event loop (a long-running server). */
  checkpointInBackground?: boolean;
  /** Postgres: streaming replicas of the database that may serve catch-up pages (DATABASE_READ_URLS). */
  readUrls?: readonly string[];
}

const openers: Record<string, (url: string, options: OpenOptions) => Store> = {
  'sqlite:': (url, options) => {
    if (options.readUrls?.length) throw new Error('DATABASE_READ_URLS names replicas of a Postgres database: DATABASE_URL is SQLite');
    return createStore(sqliteAdapter(sqliteFileOf(url)!, options));
  },
  'postgres:': (url, options) => createStore(postgresAdapter(url, options)),
  'postgresql:': (url, options) => createStore(postgresAdapter(url, options)),
};

/** The Store for DATABASE_URL: `sqlite:<path>`, `sqlite::memory:`, or `postgres://…`. */
export function openStore(url: string, options: OpenOptions = {}): Store {
  return openerOf(url)(url, options);
}

/** Throws the message a person needs when DATABASE_URL names no database this service knows. */
export function checkDatabaseUrl(url: string): void {
  openerOf(url);
}

function openerOf(url: string): (url: string, options: OpenOptions) => Store {
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase();
  const opener = scheme === undefined ? undefined : openers[scheme];
  if (!opener || (scheme !== 'sqlite:' && !url.startsWith(`${scheme}//`))) {
    throw new Error(`DATABASE_URL must start with "sqlite:" or "postgres://" (got scheme "${url.split(':')[0]}")`);
  }
  return opener;
}

/**
 * The file a SQLite URL names (`sqlite:data/x.sqlite`, `sqlite:///abs/x.sqlite`: absolute), or
 * `:memory:`; undefined for any other database.
 */
export function sqliteFileOf(url: string): string | undefined {
  if (!url.startsWith('sqlite:')) return undefined;
  const rest = url.slice('sqlite:'.length).replace(/^\/\//, '');
  return rest === ':memory:' ? rest : resolve(rest);
}

type TransactionAppend = (trx: Knex.Transaction, appends: WorkspaceAppend[], storedAt: number, sortOut: SortOutStored) => Promise<FirstSeqs>;

/** The partitions known per knex client of the library's callers (postgres/partitions.ts). */
const partitionsOfClients = new WeakMap<object, EventPartitions>();
const postgresInTransaction: TransactionAppend = (trx, appends, storedAt, sortOut) => {
  let partitions = partitionsOfClients.get(trx.client);
  if (!partitions) partitionsOfClients.set(trx.client, (partitions = new EventPartitions()));
  return appendOnPostgres(trx, partitions, HEADS_CHANNEL, appends, storedAt, sortOut, { trx });
};
/** Per knex driver, how to append inside a transaction of the caller's (the library's publish). */
const inTransaction: Record<string, TransactionAppend> = {
  'better-sqlite3': async (trx, appends, storedAt, sortOut) => appendOnSqlite(await connectionOf(trx), appends, storedAt, sortOut),
  pg: postgresInTransaction,
  postgres: postgresInTransaction,
  postgresql: postgresInTransaction,
};

/** Per knex driver, how to migrate a handle (the library's migrateLatest takes any knex on a database this service knows). */
const migrations: Record<string, (knex: Knex) => Promise<string[]>> = {
  // The single writer needs no lock: its one pooled connection is the one knex migrates on.
  'better-sqlite3': runMigrations,
  pg: migratePostgres,
  postgres: migratePostgres,
  postgresql: migratePostgres,
};

/** Store.migrate on a knex handle of the caller's. */
export function migrateKnex(knex: Knex): Promise<string[]> {
  const migrate = migrations[driverOf(knex)];
  if (!migrate) throw new Error(`migrations run on SQLite (better-sqlite3) or Postgres (pg); this knex client is "${driverOf(knex)}"`);
  return migrate(knex);
}

const driverOf = (knex: Knex | Knex.Transaction): string => String((knex.client as { config: { client?: unknown } }).config.client);

/** Store.append inside a knex transaction the caller opened on its own handle (any knex on a database this service knows). */
export function appendInTransaction(trx: Knex.Transaction, appends: WorkspaceAppend[], storedAt: number, sortOut: SortOutStored): Promise<FirstSeqs> {
  const append = inTransaction[driverOf(trx)];
  if (!append) throw new Error(`publish needs a transaction on SQLite (better-sqlite3) or Postgres (pg); this one's knex client is "${driverOf(trx)}"`);
  return append(trx, appends, storedAt, sortOut);
}
