import { ApiError } from '../errors.ts';
import { LOCK_TIMEOUT_MS, STATEMENT_TIMEOUT_MS } from '../store/db.ts';
import { LOCK_NOT_AVAILABLE, OutcomeUnknown, QUERY_CANCELED, sqlState } from '../store/write-outcome.ts';

/**
 * The answer to an emit whose append failed, always true to what the database did: "not stored"
 * only when the failure proves nothing was written (store/write-outcome.ts), otherwise "outcome
 * unknown" with the event's id, so the client can retry with it as `id` and be answered either 201
 * (stored now) or 200 (it had been stored), never a second copy. Both are the contract's
 * `internal` (500); the database's own error stays in `cause`, for the log.
 */
export function appendFailure(err: unknown, eventId: string): ApiError {
  if (err instanceof ApiError) return err;
  const failure =
    err instanceof OutcomeUnknown
      ? new ApiError(
          'internal',
          `the outcome of this emit is unknown: the database did not confirm the commit (the connection failed or gave no answer in time), so the event may or may not be stored. ` +
            `Retry with "id": "${eventId}" and the same content: the retry stores it once, or answers 200 with the event already stored`,
          500,
          {},
          eventId,
        )
      : new ApiError('internal', `the event was not stored: ${notStoredBecause(err)}; nothing was written, so it can be sent again`);
  failure.cause = err;
  return failure;
}

function notStoredBecause(err: unknown): string {
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
