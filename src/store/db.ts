import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';

export type Db = Knex;
export type DbKind = 'sqlite' | 'postgres';

// int8 (bigint) columns hold sequence numbers and epoch milliseconds, far below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export function databaseKind(url: string): DbKind {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) return 'postgres';
  throw new Error(`DATABASE_URL must start with "sqlite:" or "postgres://" (got scheme "${url.split(':')[0]}")`);
}

/** `sqlite:data/x.sqlite`, `sqlite:///abs/x.sqlite` or `sqlite::memory:` → a file name for better-sqlite3. */
function sqliteFilename(url: string): string {
  const rest = url.slice('sqlite:'.length).replace(/^\/\//, '');
  if (rest === ':memory:') return rest;
  const file = resolve(rest);
  mkdirSync(dirname(file), { recursive: true });
  return file;
}

interface SqliteConnection {
  pragma(sql: string): unknown;
  prepare(sql: string): unknown;
}

const PREPARED_STATEMENTS_KEPT = 256;

/**
 * knex's better-sqlite3 client prepares every statement anew (`connection.prepare(sql)` per query),
 * and compiling SQL is a good part of a small query's cost. The statements of this service are a
 * few fixed texts, so keep the most recently used prepared statements of the connection. Safe
 * because better-sqlite3 runs a statement to completion synchronously (`all`/`run`) and resets it,
 * and SQLite re-prepares a statement by itself when the schema changes.
 */
function cachePreparedStatements(conn: SqliteConnection): void {
  const prepare = conn.prepare.bind(conn);
  const kept = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    let statement = kept.get(sql);
    if (statement !== undefined) {
      kept.delete(sql); // most recently used goes last
    } else {
      statement = prepare(sql);
      if (kept.size >= PREPARED_STATEMENTS_KEPT) kept.delete(kept.keys().next().value!);
    }
    kept.set(sql, statement);
    return statement;
  };
}

/** How long a Postgres query may go unanswered before the connection is given up (a partition, not a slow query). */
export const QUERY_TIMEOUT_MS = 5000;

interface PgConnection {
  query: (...args: unknown[]) => unknown;
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
        if (err?.message === 'Query read timeout') conn.connection.stream.destroy();
        return callback(err, ...rest);
      };
    }
    return query.apply(this, args);
  };
}

/**
 * A knex instance for DATABASE_URL. `queryTimeoutMs` (Postgres only) bounds how long a query may
 * wait for an answer; 0 lifts it, for migrations that may legitimately run long.
 */
export function openDatabase(url: string, options: { queryTimeoutMs?: number } = {}): Db {
  if (databaseKind(url) === 'sqlite') {
    return knexFactory({
      client: 'better-sqlite3',
      connection: { filename: sqliteFilename(url) },
      useNullAsDefault: true,
      pool: {
        afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void) {
          // WAL: readers never block the writer; NORMAL sync survives a process crash (kill -9).
          // busy_timeout: several processes may share one file.
          conn.pragma('journal_mode = WAL');
          conn.pragma('synchronous = NORMAL');
          conn.pragma('busy_timeout = 5000');
          conn.pragma('foreign_keys = ON');
          cachePreparedStatements(conn);
          done(null, conn);
        },
      },
    });
  }
  const queryTimeoutMs = options.queryTimeoutMs ?? QUERY_TIMEOUT_MS;
  return knexFactory({
    client: 'pg',
    connection: {
      connectionString: url,
      // Fail fast when the database is unreachable instead of hanging requests.
      connectionTimeoutMillis: 3000,
      // A writer waits at most this long for a workspace's counter row (see store/events.ts).
      options: '-c lock_timeout=5000 -c statement_timeout=15000',
      ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : {}),
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

export function dbKind(db: Db): DbKind {
  return db.client.config.client === 'pg' ? 'postgres' : 'sqlite';
}
