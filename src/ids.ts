import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulidx';

// Monotonic: ids made in the same millisecond still sort in creation order.
const ulid = monotonicFactory();

export const newEventId = (ms?: number) => `evt_${ulid(ms)}`;
export const newWorkspaceId = () => `ws_${ulid()}`;
export const newKeyId = () => `key_${ulid()}`;
export const newWebhookEndpointId = () => `whe_${ulid()}`;
export const newRequestId = () => `req_${randomBytes(9).toString('base64url')}`;
