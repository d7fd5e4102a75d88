import type { Knex as Db } from 'knex';
import { sqliteReaderOf } from '../../src/store/sqlite/adapter.ts';

/**
 * How many times a database handle's pool handed out a connection while `work` ran: every
 * statement takes one, whether through knex or the page reader (postgres/page.ts).
 */
export async function checkoutsDuring(db: Db, work: () => Promise<unknown>): Promise<number> {
  const client = db.client as { acquireConnection(): Promise<unknown> };
  const acquire = client.acquireConnection;
  let count = 0;
  client.acquireConnection = function (this: unknown) {
    count++;
    return acquire.call(this);
  };
  try {
    await work();
  } finally {
    client.acquireConnection = acquire;
  }
  return count;
}

/** How many statements matching `pattern` a SQLite handle's read connection (SqliteReader) prepared to run while `work` ran. */
export async function sqliteReadsDuring(db: Db, pattern: RegExp, work: () => Promise<unknown>): Promise<number> {
  // Every read on that connection prepares its statement first (a cached one comes back at once).
  const conn = sqliteReaderOf(db)!.connection();
  const prepare = conn.prepare;
  let count = 0;
  conn.prepare = function (this: typeof conn, sql: string) {
    if (pattern.test(sql)) count++;
    return prepare.call(this, sql);
  } as typeof conn.prepare;
  try {
    await work();
  } finally {
    conn.prepare = prepare;
  }
  return count;
}
