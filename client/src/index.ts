/**
 * @event-feed/client: a typed client for event-feed. Every type comes from the contract
 * (the generated `components` and `operations`, written by the repository's `npm run generate`, never by hand).
 */
export { createClient, unwrap } from './client.js';
export type {
  ApiClient,
  ClientOptions,
  CursorAt,
  EventEnvelope,
  EventFeedClient,
  EventFeedResponse,
  EventsOptions,
  FeedCursorResponse,
  ListEventsRequest,
  ListEventsResponse,
  RequestOptions,
} from './client.js';
export {
  EventFeedError,
  ForbiddenError,
  InternalError,
  InvalidArgumentError,
  RateLimitedError,
  UnauthorizedError,
  WebhookVerificationError,
} from './errors.js';
export type { ErrorBody, ErrorCode } from './errors.js';
export type { RetryOptions } from './retry.js';
export { verifyWebhook } from './webhooks.js';
export type { WebhookHeaders, WebhookPayload } from './webhooks.js';
/** The contract's types: `paths`, `components`, `operations`, `webhooks`, and one alias per schema (`MailBouncedEvent`, `EmitEventRequest`…). */
export type * from './generated/api.js';
