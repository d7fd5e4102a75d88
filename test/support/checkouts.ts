import { sqliteReaderOf, type Db } from '../../src/store/db.ts';

/**
 * How many times a database handle's pool handed out a connection while `work` ran: every
 * statement takes one, whether through knex or the page reader (store/pg-page.ts).
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

/** How many statements matching `pattern` a SQLite handle's read connection (store/db.ts) ran while `work` ran. */
export async function sqliteReadsDuring(db: Db, pattern: RegExp, work: () => Promise<unknown>): Promise<number> {
  const reader = sqliteReaderOf(db)!;
  const rows = reader.rows;
  let count = 0;
  reader.rows = function <T>(this: typeof reader, sql: string, bindings: readonly unknown[]): T[] {
    if (pattern.test(sql)) count++;
    return rows.call(this, sql, bindings) as T[];
  };
  try {
    await work();
  } finally {
    reader.rows = rows;
  }
  return count;
}
