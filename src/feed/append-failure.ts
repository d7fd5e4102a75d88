import { ApiError, ServiceUnavailableError, TEMPORARY_RETRY_AFTER_SECONDS } from '../base/errors.ts';
import { notStoredBecause, temporaryBecause } from '../store/open-store.ts';
import { OutcomeUnknown } from '../store/port.ts';

/**
 * The answer to an emit whose append failed, always true to what the database did: "not stored"
 * only when the failure proves nothing was written (notStoredBecause), otherwise "outcome
 * unknown" with the event's id, so the client can retry with it as `id` and be answered either 201
 * (stored now) or 200 (it had been stored), never a second copy. Both are the contract's
 * `internal`: 503 with Retry-After (ServiceUnavailableError) when the failure should pass by
 * itself (temporaryBecause: unreachable, disk full, read-only), 500 otherwise; the database's own
 * error stays in `cause`, for the log.
 */
export function appendFailure(err: unknown, eventId: string): ApiError {
  if (err instanceof ApiError) return err;
  const temporary = temporaryBecause(err);
  const retry = temporary === undefined ? '' : ` (${temporary}); this is temporary: retry in ${TEMPORARY_RETRY_AFTER_SECONDS} s`;
  let failure: ApiError;
  if (err instanceof OutcomeUnknown) {
    const message =
      `the outcome of this emit is unknown: the database did not confirm the commit (the connection failed or gave no answer in time), so the event may or may not be stored${retry}. ` +
      `Retry with "id": "${eventId}" and the same content: the retry stores it once, or answers 200 with the event already stored`;
    failure = temporary === undefined ? new ApiError('internal', message, 500, {}, eventId) : new ServiceUnavailableError(message, eventId);
  } else if (temporary !== undefined) {
    failure = new ServiceUnavailableError(
      `the event was not stored: ${notStoredBecause(err)}; nothing was written, so it can be sent again: this is temporary, retry in ${TEMPORARY_RETRY_AFTER_SECONDS} s`,
    );
  } else
    failure = new ApiError('internal', `the event was not stored: ${notStoredBecause(err)}; nothing was written, so it can be sent again`);
  failure.cause = err;
  return failure;
}
