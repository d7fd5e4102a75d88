import { hasTrait } from '../../generated/operations.ts';
import { contractOperations } from '../contract/operations.ts';

/**
 * The longest a read is held (`Prefer: wait=N`): the contract's `x-wait-max-seconds` on the
 * operations that may be held (`x-may-be-held`: event_feed), documented to clients there; one value
 * for them all.
 */
export const WAIT_MAX_SECONDS: number = heldReadsMaxSeconds();

function heldReadsMaxSeconds(): number {
  const values = new Set(
    contractOperations.filter((operation) => hasTrait(operation.operationId, 'mayBeHeld')).map((operation) => operation.waitMaxSeconds),
  );
  const [seconds] = values;
  if (values.size !== 1 || seconds === undefined || !Number.isSafeInteger(seconds) || seconds < 1) {
    throw new Error('the contract must give the operations that may be held one x-wait-max-seconds of at least 1');
  }
  return seconds;
}

/**
 * The `wait` preference of a `Prefer` header (RFC 7240: `Prefer: wait=10`, maybe among others,
 * `respond-async, wait=10`), capped at WAIT_MAX_SECONDS; undefined when absent or unreadable, which
 * RFC 7240 says to ignore rather than refuse. 0 asks for no wait.
 */
export function preferredWaitSeconds(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text.length > 1024) return undefined;
  for (const preference of text.split(',')) {
    const match = /^\s*wait\s*=\s*"?(\d{1,9})"?\s*(?:;.*)?$/i.exec(preference);
    if (match) return Math.min(Number(match[1]), WAIT_MAX_SECONDS);
  }
  return undefined;
}
