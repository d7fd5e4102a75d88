import type { Knex } from 'knex';
import type { SqlPieces } from './common/sql.ts';
import type { FirstSeqs, SortOutStored, Store, WorkspaceAppend } from './port.ts';

/**
 * The databases this service runs on, by name. A third one is a name here: the compiler then
 * asks for its kind object in `DATABASE_KINDS` (openStore) and for its step in every migration
 * that differs per database (`PerKind`).
 */
export type KindName = 'sqlite' | 'postgres';

/** One value per database kind: what code that differs per database gives for each (a migration's step, a piece of SQL). */
export type PerKind<T> = { readonly [K in KindName]: T };

/** How a database kind's failures are told apart. */
export interface KindErrors {
  /** A transient conflict whose transaction rolled back whole: running it again is safe. */
  retryable(err: unknown): boolean;
  /** Words for the client when `err`, one of this database's and proving the write rolled back, is recognised; undefined otherwise. */
  notStoredBecause(err: unknown): string | undefined;
  /**
   * Words for the client when `err` is this database's failure that should pass by itself (the
   * server unreachable or restarting, the disk full, the database read-only): the answer is then
   * 503 with Retry-After. Undefined otherwise.
   */
  temporaryBecause(err: unknown): string | undefined;
}

export interface OpenOptions {
  /** Postgres: how long a query may go unanswered; 0 lifts it (migrations, the CLI). */
  queryTimeoutMs?: number;
  /** SQLite: checkpoint the WAL off the event loop (a long-running server). */
  checkpointInBackground?: boolean;
  /** Postgres: streaming replicas of the database that may serve catch-up pages (DATABASE_READ_URLS). */
  readUrls?: readonly string[];
}

/** A Store as openStore opens it: with its knex handle, for the library's users (their own transactions) and for tools. */
export type OpenedStore = Store & { readonly knex: Knex };

/**
 * Everything that differs about one database, in one value its folder exports (`sqliteKind`,
 * `postgresKind`): which URLs and which knex driver are its, how to open it, migrate it, append in
 * a caller's transaction, and the SQL pieces common code needs. openStore walks `DATABASE_KINDS`:
 * no code outside a kind's folder and openStore tells databases apart.
 */
export interface DatabaseKind {
  readonly name: KindName;
  /** Its name for people: `SQLite`, `Postgres`. */
  readonly label: string;
  /** Its name in OpenTelemetry's semantic conventions (`db.system.name` of its spans: tracedStore). */
  readonly telemetryName: string;
  /** The URL schemes it answers to, lower case with their colon: `sqlite:`, `postgres:`. */
  readonly schemes: readonly string[];
  /** How its URLs look, for people: `sqlite:<path>`, `postgres://…`. */
  readonly urlForm: string;
  /** Whether a URL with one of its schemes is well formed (Postgres: `scheme://`). */
  accepts(url: string): boolean;
  /** The knex client names its driver goes by: how a knex handle of the library's caller is recognised. */
  readonly drivers: readonly string[];
  /** Whether it may have read replicas serving catch-up pages (DATABASE_READ_URLS). */
  readonly readReplicas: boolean;
  /** The file a URL of it names (or `:memory:`), for a database that is a file; absent for a server. */
  fileOf?(url: string): string;
  open(url: string, options: OpenOptions): OpenedStore;
  /** Store.migrate on a knex handle of the caller's (the library's migrateLatest). */
  migrate(knex: Knex): Promise<string[]>;
  /** Store.append inside a knex transaction the caller opened on its own handle (the library's publish). */
  appendInTransaction(trx: Knex.Transaction, appends: WorkspaceAppend[], storedAt: number, sortOut: SortOutStored): Promise<FirstSeqs>;
  /** The SQL of the few statements common code writes that differ on it, and how its driver answers a raw statement. */
  readonly sql: SqlPieces;
  readonly errors: KindErrors;
}
