import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import { createRequire } from 'node:module';
import pino from 'pino';
import { configureSqlite, SqliteReader, WalCheckpointer, type SqliteConnection } from './sqlite-connection.ts';

export type Db = Knex;
export type DbKind = 'sqlite' | 'postgres';

// pg is loaded with the first Postgres database only: a SQLite service does without it (~5 MB).
let pgReady = false;
function preparePg(): void {
  if (pgReady) return;
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  // int8 (bigint) columns hold sequence numbers and epoch milliseconds, far below 2^53: read them as numbers.
  pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));
  pgReady = true;
}

export function databaseKind(url: string): DbKind {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return 'postgres';
  throw new Error(`DATABASE_URL must start with "sqlite:" or "postgres://" (got scheme "${url.split(':')[0]}")`);
}

/** `sqlite:data/x.sqlite`, `sqlite:///abs/x.sqlite` or `sqlite::memory:` → the absolute file name (or `:memory:`). */
export function sqliteFilePath(url: string): string {
  const rest = url.slice('sqlite:'.length).replace(/^\/\//, '');
  return rest === ':memory:' ? rest : resolve(rest);
}

/** The file name for better-sqlite3, its folder created. */
function sqliteFilename(url: string): string {
  const file = sqliteFilePath(url);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  return file;
}

/** How long a Postgres query may go unanswered before the connection is given up (a partition, not a slow query). */
export const QUERY_TIMEOUT_MS = 5000;
/**
 * Postgres cancels a statement itself after this long (statement_timeout), a second before the
 * client would give up on it: the error is then the database's own and the statement rolled back,
 * so "not stored" is a true answer. Were it longer, the client would drop the connection while
 * Postgres went on, and might commit (store/write-outcome.ts). A commit is not a statement: a
 * commit that outlasts the query timeout is the one case left whose outcome is unknown.
 */
export const STATEMENT_TIMEOUT_MS = 4000;
/**
 * How long a statement waits for a row lock (lock_timeout), below STATEMENT_TIMEOUT_MS so a wait
 * for a workspace's counter row held by another transaction (an application's transaction that
 * published and has not committed yet) is reported as such (see store/events.ts).
 */
export const LOCK_TIMEOUT_MS = 3000;
/** The margin by which the server's statement_timeout ends before a shorter query timeout given to openDatabase. */
const SERVER_CANCELS_FIRST_BY_MS = QUERY_TIMEOUT_MS - STATEMENT_TIMEOUT_MS;
/** Handles without a query timeout (migrations, the CLI) keep longer server-side limits. */
const UNWATCHED_STATEMENT_TIMEOUT_MS = 15_000;
const UNWATCHED_LOCK_TIMEOUT_MS = 5000;

interface PgConnection {
  query: (...args: unknown[]) => unknown;
  __knex__disposed?: unknown;
  connection: { stream: { destroy(): void } };
}

/**
 * pg's query_timeout rejects a query that got no answer but leaves its connection waiting for
 * it, so whatever is queued behind (a transaction's ROLLBACK) would hang as long as the network
 * does. Dropping the socket fails those at once; knex then sees the connection end and the pool
 * replaces it.
 */
function dropConnectionOnTimeout(conn: PgConnection): void {
  const query = conn.query;
  conn.query = function (this: unknown, ...args: unknown[]) {
    const callback = args.at(-1);
    if (typeof callback === 'function') {
      args[args.length - 1] = (err: Error | null, ...rest: unknown[]) => {
        if (err?.message === 'Query read timeout') {
          // knex's own mark of a dead connection (set when its 'end' event comes, a few ticks
          // later): set now, so the pool does not lend it again to the next query meanwhile.
          conn.__knex__disposed ??= err.message;
          conn.connection.stream.destroy();
        }
        return callback(err, ...rest);
      };
    }
    return query.apply(this, args);
  };
}

/*
 * knex's own warnings ("Acquire connection error: <stack>", "Connection Error: …") go to console.log
 * by default: multi-line stack traces on stdout, among the JSON log lines and in the CLI's result.
 * They go to stderr instead, as one JSON line: the first line only (no stack, no SQL).
 */
const driverLog = pino({ level: process.env.LOG_LEVEL || 'info', base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination(2));
const driverWarning = (message: unknown) =>
  driverLog.warn({ detail: String(message).split('\n')[0]!.replace(/^.* - /, '').slice(0, 300) }, 'database driver warning');
const knexLog = { warn: driverWarning, error: driverWarning, deprecate: driverWarning, debug: () => {} };

/**
 * A knex instance for DATABASE_URL. `queryTimeoutMs` (Postgres only) bounds how long a query may
 * wait for an answer; 0 lifts it, for migrations that may legitimately run long.
 */
export function openDatabase(url: string, options: { queryTimeoutMs?: number; checkpointInBackground?: boolean } = {}): Db {
  if (databaseKind(url) === 'sqlite') {
    const filename = sqliteFilename(url);
    // A long-running server checkpoints the WAL off its event loop (WalCheckpointer); others as SQLite does.
    const checkpointer =
      options.checkpointInBackground && filename !== ':memory:'
        ? new WalCheckpointer(filename, { onFailure: (reason) => onCheckpointFailure(reason), holdWriter: (work) => db.transaction(() => work()) })
        : undefined;
    const db = knexFactory({
      client: 'better-sqlite3',
      log: knexLog,
      connection: { filename },
      useNullAsDefault: true,
      pool: {
        afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void) {
          configureSqlite(conn);
          if (checkpointer) conn.pragma('wal_autocheckpoint = 0');
          sqliteWriters.set(db, { conn, dataVersion: conn.prepare('PRAGMA data_version').pluck(), generation: ++writerGenerations });
          done(null, conn);
        },
      },
    });
    // An in-memory database exists only on knex's connection: nothing else can read it.
    if (filename !== ':memory:') {
      const reader = new SqliteReader(filename);
      sqliteReaders.set(db, reader);
      // knex.destroy() ends in its client's destroy(): close the reader there too.
      const client = db.client as { destroy(callback?: unknown): Promise<void> };
      const destroy = client.destroy.bind(client);
      client.destroy = (callback?: unknown) => {
        checkpointer?.stop();
        reader.close();
        return destroy(callback);
      };
    }
    const onCheckpointFailure = (reason: string) => {
      driverLog.warn({ detail: reason.slice(0, 300) }, 'WAL checkpoints are back in the writing connection');
      void db.raw('PRAGMA wal_autocheckpoint = 1000').catch(() => {});
    };
    checkpointer?.start();
    return db;
  }
  preparePg();
  const queryTimeoutMs = options.queryTimeoutMs ?? QUERY_TIMEOUT_MS;
  const watched = queryTimeoutMs > 0;
  // The server's limits end before the client's: a statement the client gives up on is one Postgres has not finished.
  const statementTimeoutMs = watched ? Math.max(1, Math.min(STATEMENT_TIMEOUT_MS, queryTimeoutMs - SERVER_CANCELS_FIRST_BY_MS)) : UNWATCHED_STATEMENT_TIMEOUT_MS;
  const lockTimeoutMs = watched ? Math.min(LOCK_TIMEOUT_MS, statementTimeoutMs) : UNWATCHED_LOCK_TIMEOUT_MS;
  return knexFactory({
    client: 'pg',
    log: knexLog,
    connection: {
      connectionString: url,
      // Fail fast when the database is unreachable instead of hanging requests.
      connectionTimeoutMillis: 3000,
      // plan_cache_mode: the service's named statements (the appends, the pages) are planned once
      // per connection and keep that plan. Unnamed ones (knex's) are planned at every run whatever
      // it says. A restricted page merges one scan per mailbox: Postgres judged its generic plan
      // costlier than one made for the values and planned it at every run, about 3 ms for 50
      // mailboxes, twice its run (bench/README.md).
      options: `-c lock_timeout=${lockTimeoutMs} -c statement_timeout=${statementTimeoutMs} -c plan_cache_mode=force_generic_plan`,
      ...(watched ? { query_timeout: queryTimeoutMs } : {}),
      keepAlive: true,
    },
    pool: {
      min: 0,
      max: 10,
      afterCreate(conn: PgConnection, done: (err: Error | null, conn: unknown) => void) {
        dropConnectionOnTimeout(conn);
        done(null, conn);
      },
    },
    acquireConnectionTimeout: 5000,
  });
}

const sqliteReaders = new WeakMap<object, SqliteReader>();
const sqliteWriters = new WeakMap<object, { conn: SqliteConnection; dataVersion: { get(): unknown }; generation: number; version?: string }>();
let writerGenerations = 0;

/**
 * SQLite: a value that changes whenever another connection (another process: the CLI, an
 * application publishing with the library) has committed to the file since this handle's writing
 * connection last looked; this handle's own commits leave it alone (PRAGMA data_version, 5–10 µs).
 * undefined when it cannot be told now: no connection yet, or a transaction of this handle is open
 * on it (its snapshot would hide what others committed since).
 */
export function othersWritesVersion(db: Db): string | undefined {
  const writer = sqliteWriters.get(db);
  if (!writer || !writer.conn.open || writer.conn.inTransaction) return undefined;
  // One answer per synchronous stretch of code (a poll asks several times in one): nothing that
  // stretch does can tell an answer from one a few microseconds later.
  if (writer.version === undefined) {
    writer.version = `${writer.generation}:${writer.dataVersion.get()}`;
    queueMicrotask(() => (writer.version = undefined));
  }
  return writer.version;
}

/** The read connection of a SQLite database (see SqliteReader); none for Postgres, in-memory SQLite or a transaction. */
export function sqliteReaderOf(db: Db | Knex.Transaction): SqliteReader | undefined {
  return sqliteReaders.get(db);
}

export function dbKind(db: Db): DbKind {
  return db.client.config.client === 'pg' ? 'postgres' : 'sqlite';
}
