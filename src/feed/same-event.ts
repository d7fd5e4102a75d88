import stringify from 'safe-stable-stringify';
import type { EventEnvelope } from '../../generated/types.ts';

/**
 * Whether an emit with a client-supplied id is the event already stored under that id (an
 * idempotent replay) rather than other content (a conflict). Both sides are envelopes as the
 * server builds them (prepareEvent), so `occurred_at` is already normalised by
 * the one date-time rule (utcMillisecondsOf: UTC, milliseconds, `Z`) and `id` and `account`
 * are equal by construction (the stored one was found by them), and `v` is the server's.
 *
 * - `type`, `subject` and `data` must be equal as JSON values: key order and spelling (escapes,
 *   `1.0` for `1`) do not matter, because both are parsed and written out with sorted keys.
 * - `occurred_at` must be the same instant when the retry gives one; a retry that omits it matches
 *   whatever was stored, server-set or given. So a client may send back the event exactly as the
 *   feed returned it, or the request it first sent, or that request without `occurred_at`.
 *
 * Compared from the stored envelope, never from a hash of the first request: the question is
 * whether it is the same event, not whether the request has the same shape.
 * Cost: two JSON.parse of at most an envelope each, only for an id already stored (retries) whose
 * text differs from the stored one.
 */
export function sameEvent(storedEnvelope: string, retryEnvelope: string, retryGaveOccurredAt: boolean): boolean {
  // The usual retry (the same request again, or the event as the feed returned it) builds the very
  // same text: no parsing then (parsing grows with the event's size).
  if (storedEnvelope === retryEnvelope) return true;
  const stored = JSON.parse(storedEnvelope) as EventEnvelope;
  const retry = JSON.parse(retryEnvelope) as EventEnvelope;
  if (retryGaveOccurredAt && retry.occurred_at !== stored.occurred_at) return false;
  return stringify([stored.type, stored.subject, stored.data]) === stringify([retry.type, retry.subject, retry.data]);
}
