import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import type { Adapter } from '../common/adapter.ts';
import type { SqlPieces } from '../common/sql.ts';
import { driverLog, knexLog } from '../common/driver-log.ts';
import { runMigrations } from '../common/migrate.ts';
import { appendOnSqlite, inSqliteWriteTransaction } from './append.ts';
import { OthersWrites } from './changes.ts';
import { configureSqlite, SqliteReader, WalCheckpointer, type SqliteConnection } from './connection.ts';
import { readSqlitePage } from './page.ts';
import { sqliteSearchSession } from './search.ts';
import { PAGE_MAX_BYTES } from '../../limits/page-bytes.ts';
import { sqliteRows } from './rows.ts';
import { sqliteErrors } from './errors.ts';

/** The SQL pieces common code needs on SQLite (sqliteKind.sql): writes are serialized, so nothing to skip. */
export const SQLITE_SQL: SqlPieces = { greatest: 'MAX', skipLocked: '', notIndexed: '+', rows: sqliteRows };

// A write that changes nothing: it makes SQLite take the database's write lock now.
const TAKE_WRITE_LOCK = "UPDATE settings SET value = value WHERE key = ''";

const STORED_AT_OF = 'SELECT stored_at FROM events WHERE workspace_id = ? AND seq = ?';
const storedAtOf = ([row]: Array<{ stored_at: number | string }>) => (row === undefined ? undefined : Number(row.stored_at));

/** Each handle's read connection, for tests that count what it runs (sqliteReaderOf). */
const readers = new WeakMap<Knex, SqliteReader>();

/** The read connection of a SQLite store's knex handle; none in memory. For tests that observe reads. */
export const sqliteReaderOf = (knex: Knex): SqliteReader | undefined => readers.get(knex);

/**
 * SQLite, embedded: one file (or `:memory:`), one writing connection (knex's pool of one), a
 * second connection for reads outside transactions (SqliteReader), WAL checkpoints off the event
 * loop for a long-running server (WalCheckpointer).
 */
export function sqliteAdapter(file: string, options: { checkpointInBackground?: boolean } = {}): Adapter {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const othersWrites = new OthersWrites();
  // A long-running server checkpoints the WAL off its event loop (WalCheckpointer); others as SQLite does.
  const checkpointer =
    options.checkpointInBackground && file !== ':memory:'
      ? new WalCheckpointer(file, {
          onFailure: (reason) => onCheckpointFailure(reason),
          holdWriter: (work) => knex.transaction(() => work()),
        })
      : undefined;
  const knex: Knex = knexFactory({
    client: 'better-sqlite3',
    log: knexLog,
    connection: { filename: file },
    useNullAsDefault: true,
    pool: {
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void) {
        configureSqlite(conn);
        if (checkpointer) conn.pragma('wal_autocheckpoint = 0');
        othersWrites.writerOpened(conn);
        done(null, conn);
      },
    },
  });
  const onCheckpointFailure = (reason: string) => {
    driverLog.warn({ detail: reason.slice(0, 300) }, 'WAL checkpoints are back in the writing connection');
    void knex.raw('PRAGMA wal_autocheckpoint = 1000').catch(() => {});
  };
  checkpointer?.start();
  // An in-memory database exists only on knex's connection: nothing else can read it.
  const reader = file === ':memory:' ? undefined : new SqliteReader(file);
  if (reader) readers.set(knex, reader);
  // knex.destroy() (the library's users close their handle that way) ends in its client's
  // destroy(): the reader and the checkpointer stop there too.
  const client = knex.client as { destroy(callback?: unknown): Promise<void> };
  const destroy = client.destroy.bind(client);
  client.destroy = (callback?: unknown) => {
    checkpointer?.stop();
    reader?.close();
    return destroy(callback);
  };

  /** Runs a synchronous read on the read connection, or (in memory) on knex's one connection. */
  async function onReadConnection<T>(read: (conn: SqliteConnection) => T): Promise<T> {
    if (reader) return read(reader.connection());
    const client = knex.client as {
      acquireConnection(): Promise<SqliteConnection>;
      releaseConnection(conn: SqliteConnection): Promise<unknown>;
    };
    const conn = await client.acquireConnection();
    try {
      return read(conn);
    } finally {
      await client.releaseConnection(conn);
    }
  }

  const readRows = <T>(sql: string, bindings: readonly Knex.Value[]): Promise<T[]> =>
    reader ? Promise.resolve(reader.rows<T>(sql, bindings)) : sqliteRows<T>(knex, sql, bindings);

  return {
    description: file === ':memory:' ? 'SQLite (in memory)' : `SQLite (${file})`,
    knex,
    appends: { concurrent: 1, skipLocked: false },
    othersWritesVersion: () => othersWrites.version(),
    // A synchronous transaction of its own on the writing connection, without a knex transaction
    // object (a caller's own transaction appends through sqliteKind.appendInTransaction).
    append: async (sorted, storedAt, sortOut) => inSqliteWriteTransaction(knex, (conn) => appendOnSqlite(conn, sorted, storedAt, sortOut)),
    queryPage: (q) => onReadConnection((conn) => readSqlitePage(conn, q, PAGE_MAX_BYTES)),
    searchSession: () => sqliteSearchSession(readRows),
    readRows,
    // One table: the primary key finds the row, bounds would add nothing.
    storedAtOf: async (workspaceId, seq) => storedAtOf(await readRows<{ stored_at: number }>(STORED_AT_OF, [workspaceId, seq])),
    // Take the write lock first: a transaction that reads and then writes would otherwise ask for
    // it mid-way, and SQLite refuses that upgrade at once when another process writes
    // (SQLITE_BUSY without waiting busy_timeout). Taken up front, it is waited for like any lock.
    beginWrite: async (trx) => void (await trx.raw(TAKE_WRITE_LOCK)),
    // Write transactions are serialized by the write lock taken in beginWrite.
    lockRow: async () => {},
    sql: SQLITE_SQL,
    errors: sqliteErrors,
    // The single writer needs no lock: its one pooled connection is the one knex migrates on.
    migrate: () => runMigrations(knex, 'sqlite'),
    close: () => knex.destroy(),
  };
}
