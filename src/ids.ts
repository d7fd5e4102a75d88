import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulidx';

// Monotonic: ids made in the same millisecond still sort in creation order.
const ulid = monotonicFactory();

export const newEventId = (ms?: number) => `evt_${ulid(ms)}`;
export const newWorkspaceId = () => `ws_${ulid()}`;
export const newKeyId = () => `key_${ulid()}`;
export const newWebhookEndpointId = () => `whe_${ulid()}`;

// Request ids come from a pool of random bytes: one getrandom call per 455 requests, not one each.
const REQUEST_ID_BYTES = 9;
let pool = Buffer.alloc(0);
let offset = 0;
export function newRequestId(): string {
  if (offset + REQUEST_ID_BYTES > pool.length) {
    pool = randomBytes(REQUEST_ID_BYTES * 455);
    offset = 0;
  }
  offset += REQUEST_ID_BYTES;
  return `req_${pool.toString('base64url', offset - REQUEST_ID_BYTES, offset)}`;
}
