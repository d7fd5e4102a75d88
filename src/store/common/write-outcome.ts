import { LOCK_TIMEOUT_MS, STATEMENT_TIMEOUT_MS } from './timeouts.ts';

/**
 * What a failed write tells about its outcome. A Postgres statement sent outside a transaction
 * commits by itself once it completes: when the answer is lost (the connection dropped, or the
 * client's query timeout gave up on it), the commit may have happened or not, and only a look at
 * the database afterwards can tell. A failure may be reported as "not stored" only when it proves
 * the statement rolled back.
 */

/** The write may or may not have committed; `cause` is what the driver reported. */
export class OutcomeUnknown extends Error {
  constructor(override readonly cause: unknown) {
    // The driver's own words, without the statement's text that knex puts before them.
    super(`the outcome of the write is unknown: ${String((cause as Error | undefined)?.message ?? cause).split(' - ').at(-1)}`);
    this.name = 'OutcomeUnknown';
  }
}

/**
 * Whether `err` proves that a write statement rolled back: Postgres answered it with an error
 * (severity ERROR: the statement failed, so its transaction aborted; lock_timeout and
 * statement_timeout end this way, see postgres/connection.ts), or the statement was never sent (no
 * connection could be had: the pool's wait ran out, or connecting failed). A FATAL (the server
 * ended the session, e.g. pg_terminate_backend) or no answer at all proves nothing: the commit
 * may have gone through first.
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

/** Why a write that proves it rolled back failed, in words for the client (the database's own error stays in the log). */
export function notStoredBecause(err: unknown): string {
  const { code, name } = (err ?? {}) as { code?: unknown; name?: unknown };
  if (String(code).startsWith('SQLITE_BUSY')) return 'another process held the database for too long';
  if (name === 'KnexTimeoutError') return 'no database connection was free in time';
  switch (sqlState(err)) {
    case LOCK_NOT_AVAILABLE:
      return `another transaction held the workspace's feed for more than ${LOCK_TIMEOUT_MS / 1000} s`;
    case QUERY_CANCELED:
      return `the database did not finish the write within ${STATEMENT_TIMEOUT_MS / 1000} s`;
    case undefined:
      return 'the database could not be reached, or did not take the write';
    default:
      return 'the database refused the write';
  }
}
