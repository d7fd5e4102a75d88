import { ApiError, ServiceUnavailableError, TEMPORARY_RETRY_AFTER_SECONDS } from '../base/errors.ts';
import { temporaryBecause } from '../store/open-store.ts';

/**
 * What a transport answers for a thrown value: a database failure that should pass by itself
 * (temporaryBecause: unreachable, disk full, read-only) becomes a ServiceUnavailableError (503,
 * Retry-After, code `internal`, a message saying to retry), keeping the database's error as its
 * `cause` for the log; anything else is answered as it is (toErrorBody).
 */
export function answerFor(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  const because = temporaryBecause(err);
  if (because === undefined) return err;
  const answer = new ServiceUnavailableError(
    `the service is temporarily unavailable: ${because}; nothing was changed by this request, retry in ${TEMPORARY_RETRY_AFTER_SECONDS} s`,
  );
  answer.cause = err;
  return answer;
}
