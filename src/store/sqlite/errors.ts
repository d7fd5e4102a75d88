import type { KindErrors } from '../database-kind.ts';

const codeOf = (err: unknown) => (err as { code?: unknown } | null)?.code;

/**
 * SQLite's failures (sqliteKind.errors). Transient: another process's writer held the file
 * (busy, locked), or a concurrent insert of the same client-supplied event id (the retry then
 * finds the stored event and answers as an idempotent replay). Temporary (503): the disk full, the
 * file read-only, busy past the wait, or failing to read or write.
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
  notStoredBecause(err) {
    const code = String(codeOf(err));
    if (code.startsWith('SQLITE_BUSY')) return 'another process held the database for too long';
    return sqliteErrors.temporaryBecause(err);
  },
  temporaryBecause(err) {
    const code = String(codeOf(err));
    if (code === 'SQLITE_FULL') return "the database's disk is full";
    if (code.startsWith('SQLITE_READONLY')) return 'the database is read-only at the moment';
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'another process held the database for too long';
    if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_CANTOPEN')) return "the database's file could not be read or written";
    return undefined;
  },
};
