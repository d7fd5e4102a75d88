import type { KindErrors } from '../database-kind.ts';

const codeOf = (err: unknown) => (err as { code?: unknown } | null)?.code;

/**
 * SQLite's failures (sqliteKind.errors). Transient: another process's writer held the file
 * (busy, locked), or a concurrent insert of the same client-supplied event id (the retry then
 * finds the stored event and answers as an idempotent replay).
 */
export const sqliteErrors: KindErrors = {
  retryable(err) {
    const code = codeOf(err);
    return (
      typeof code === 'string' &&
      (['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_RECOVERY', 'SQLITE_LOCKED'].includes(code) ||
        code.startsWith('SQLITE_CONSTRAINT_UNIQUE'))
    );
  },
  notStoredBecause: (err) => (String(codeOf(err)).startsWith('SQLITE_BUSY') ? 'another process held the database for too long' : undefined),
};
