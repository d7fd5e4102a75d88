/**
 * Whether `err` proves that a write statement rolled back: Postgres answered it with an error
 * (severity ERROR: the statement failed, so its transaction aborted; lock_timeout and
 * statement_timeout end this way, see openPostgresKnex), or the statement was never sent (no
 * connection could be had: the pool's wait ran out, or connecting failed). A FATAL (the server
 * ended the session, e.g. pg_terminate_backend) or no answer at all proves nothing: the commit
 * may have gone through first. Otherwise an append throws OutcomeUnknown.
 */
export function provesRollback(err: unknown): boolean {
  const { severity, name, syscall } = (err ?? {}) as { severity?: unknown; name?: unknown; syscall?: unknown };
  return severity === 'ERROR' || name === 'KnexTimeoutError' || syscall === 'connect' || syscall === 'getaddrinfo';
}

/** The SQLSTATE of a Postgres error, if it is one. */
export const sqlState = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
};

/** lock_timeout ran out: another transaction held a row (a workspace's counter) for too long. */
export const LOCK_NOT_AVAILABLE = '55P03';
/** statement_timeout ran out (or the statement was cancelled). */
export const QUERY_CANCELED = '57014';

/** What every kind's failures share: words for a failure no kind's `errors.notStoredBecause` recognised. */
export function notStoredOnAnyDatabase(err: unknown): string {
  const { name } = (err ?? {}) as { name?: unknown };
  if (name === 'KnexTimeoutError') return 'no database connection was free in time';
  return 'the database could not be reached, or did not take the write';
}
