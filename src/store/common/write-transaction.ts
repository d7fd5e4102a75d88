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

/** Runs `attempt` again (after a short random pause) while it fails with a transient conflict, up to ATTEMPTS times. */
export async function retryingTransient<T>(attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (n >= ATTEMPTS || !isRetryable(err)) throw err;
      await new Promise((done) => setTimeout(done, Math.random() * 10 * n));
    }
  }
}
