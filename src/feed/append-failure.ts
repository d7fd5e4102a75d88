import { ApiError } from '../base/errors.ts';
import { notStoredBecause } from '../store/open-store.ts';
import { OutcomeUnknown } from '../store/port.ts';

/**
 * The answer to an emit whose append failed, always true to what the database did: "not stored"
 * only when the failure proves nothing was written (notStoredBecause), otherwise "outcome
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
