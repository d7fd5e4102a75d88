import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulidx';

/*
 * Random bytes come from a pool refilled 4 KiB at a time: ulidx asks the system for one byte per
 * character of an id (16 getrandom calls per event id), and a request id needs 9 bytes. The pool
 * is the same cryptographic source, drawn in bulk.
 */
const POOL_SIZE = 4096;
let pool = Buffer.alloc(0);
let offset = 0;
function takeRandom(count: number): number {
  if (offset + count > pool.length) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  offset += count;
  return offset - count;
}

// Monotonic: ids made in the same millisecond still sort in creation order.
const ulid = monotonicFactory(() => {
  const at = takeRandom(1); // first: it may refill the pool
  return pool[at]! / 256;
});

export const newEventId = (ms?: number) => `evt_${ulid(ms)}`;
export const newWorkspaceId = () => `ws_${ulid()}`;
export const newKeyId = () => `key_${ulid()}`;
export const newWebhookEndpointId = () => `whe_${ulid()}`;
/** A test delivery's id (test_webhook): never an event's, so a receiver cannot mistake it for one of the feed. */
export const newTestDeliveryId = () => `whtest_${ulid()}`;
export const newRequestId = () => {
  const at = takeRandom(9);
  return `req_${pool.toString('base64url', at, at + 9)}`;
};
export const newErasureId = () => `ers_${ulid()}`;
