import type { Knex } from 'knex';
import type { Db } from './db.ts';

// Transient conflicts whose transaction rolled back whole, so running it again is safe:
// SQLite writers of other processes (busy), Postgres serialization failures and deadlocks, and a
// unique violation from a concurrent insert of the same client-supplied event id (the retry then
// finds the stored event and answers as an idempotent replay).
const RETRYABLE = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_LOCKED', '40001', '40P01', '23505']);
const ATTEMPTS = 5;

export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (RETRYABLE.has(code) || code.startsWith('SQLITE_CONSTRAINT_UNIQUE'));
}

export async function writeTransaction<T>(db: Db, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (err) {
      if (attempt >= ATTEMPTS || !isRetryable(err)) throw err;
      await new Promise((done) => setTimeout(done, Math.random() * 10 * attempt));
    }
  }
}
