import { tracingOn } from '../tracing/active.ts';
import { tracedStore } from './traced-store.ts';
import type { Knex } from 'knex';
import type { DatabaseKind, KindName, OpenedStore, OpenOptions } from './database-kind.ts';
import { notStoredOnAnyDatabase } from './postgres/write-outcome.ts';
import { OutcomeUnknown, type FirstSeqs, type SortOutStored, type WorkspaceAppend } from './port.ts';
import { postgresKind } from './postgres/kind.ts';
import { sqliteKind } from './sqlite/kind.ts';

export type { OpenedStore, OpenOptions } from './database-kind.ts';

/*
 * The one place where a database URL's scheme or a knex driver is looked up: in the kinds' own
 * lists (DatabaseKind.schemes, .drivers). Everything else speaks to the Store or asks
 * this module (kindOfUrl). A third database is a folder beside sqlite/ and postgres/ exporting its
 * kind, and its entry below.
 */

/** Every database this service runs on, one entry per KindName (the compiler asks for a new kind's). */
const KINDS: { readonly [K in KindName]: DatabaseKind & { readonly name: K } } = {
  sqlite: sqliteKind as DatabaseKind & { readonly name: 'sqlite' },
  postgres: postgresKind as DatabaseKind & { readonly name: 'postgres' },
};
export const DATABASE_KINDS: readonly DatabaseKind[] = Object.values(KINDS);

/** The kind of this name (tests, tools). */
export const kindNamed = (name: KindName): DatabaseKind => KINDS[name];

/** The kind a URL names by its scheme (whether or not it is well formed), or undefined. */
export function kindOfUrl(url: string): DatabaseKind | undefined {
  const scheme = /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0].toLowerCase();
  return scheme === undefined ? undefined : DATABASE_KINDS.find((kind) => kind.schemes.includes(scheme));
}

/** Whether the database a URL names may have read replicas (DATABASE_READ_URLS). */
export function servesReadReplicas(url: string): boolean {
  const kind = kindOfUrl(url);
  return kind !== undefined && kind.accepts(url) && kind.readReplicas;
}

/** The Store for DATABASE_URL: `sqlite:<path>`, `sqlite::memory:`, or `postgres://…`. */
export function openStore(url: string, options: OpenOptions = {}): OpenedStore {
  const kind = checkedKindOf(url);
  const store = kind.open(url, options);
  // Only once tracing has started (startTracing): off, the store is the adapter's own, untouched.
  return tracingOn() ? tracedStore(store, kind.telemetryName) : store;
}

/** Throws the message a person needs when DATABASE_URL names no database this service knows. */
export function checkDatabaseUrl(url: string): void {
  checkedKindOf(url);
}

function checkedKindOf(url: string): DatabaseKind {
  const kind = kindOfUrl(url);
  if (!kind || !kind.accepts(url)) {
    const forms = DATABASE_KINDS.map((known) => `"${known.urlForm.replace(/<.*|….*/, '')}"`).join(' or ');
    throw new Error(`DATABASE_URL must start with ${forms} (got scheme "${url.split(':')[0]}")`);
  }
  return kind;
}

/**
 * The file a database URL names, for a database that is a file (SQLite: `sqlite:data/x.sqlite`,
 * `sqlite:///abs/x.sqlite`: absolute, or `:memory:`); undefined for any other database.
 */
export function sqliteFileOf(url: string): string | undefined {
  return kindOfUrl(url)?.fileOf?.(url);
}

/** The kind of a knex handle of the library's caller, from its driver; throws for a driver no kind has. */
function kindOfKnex(knex: Knex | Knex.Transaction, use: string): DatabaseKind {
  const driver = String((knex.client as { config: { client?: unknown } }).config.client);
  const kind = DATABASE_KINDS.find((known) => known.drivers.includes(driver));
  if (!kind)
    throw new Error(
      `${use} on ${DATABASE_KINDS.map((known) => `${known.label} (${known.drivers[0]})`).join(' or ')}; this knex client is "${driver}"`,
    );
  return kind;
}

/** Store.migrate on a knex handle of the caller's. */
export function migrateKnex(knex: Knex): Promise<string[]> {
  return kindOfKnex(knex, 'migrations run').migrate(knex);
}

/** Store.append inside a knex transaction the caller opened on its own handle (any knex on a database this service knows). */
export function appendInTransaction(
  trx: Knex.Transaction,
  appends: WorkspaceAppend[],
  storedAt: number,
  sortOut: SortOutStored,
): Promise<FirstSeqs> {
  return kindOfKnex(trx, 'publish needs a transaction').appendInTransaction(trx, appends, storedAt, sortOut);
}

/**
 * Words for the client when `err` is a database failure that should pass by itself (unreachable,
 * disk full, read-only: each kind's `errors.temporaryBecause`); undefined for any other failure.
 */
export function temporaryBecause(err: unknown): string | undefined {
  const cause = err instanceof OutcomeUnknown ? err.cause : err;
  for (const kind of DATABASE_KINDS) {
    const because = kind.errors.temporaryBecause(cause);
    if (because !== undefined) return because;
  }
  return undefined;
}

/** Why a write that proves it rolled back failed, in words for the client (the database's own error stays in the log). */
export function notStoredBecause(err: unknown): string {
  for (const kind of DATABASE_KINDS) {
    const because = kind.errors.notStoredBecause(err);
    if (because !== undefined) return because;
  }
  return notStoredOnAnyDatabase(err);
}
