// The view's requests and answers, typed by the contract through the typed client's generated
// types (`components` and `operations`, which npm run generate writes): no shape is written here by hand.
// Types only: nothing of the client is bundled.
import type { components, operations } from '../../../client/src/generated/api.ts';

/** The operations the view calls (POST /v1/<operation>). */
export type ViewOperation = 'feed_cursor' | 'list_events' | 'event_feed';

/** The JSON body an operation takes. */
export type RequestOf<Op extends ViewOperation> = NonNullable<operations[Op]['requestBody']>['content']['application/json'];

/** The JSON body of an operation's 200 answer. */
export type ResponseOf<Op extends ViewOperation> = operations[Op]['responses'][200]['content']['application/json'];

/** An event as stored: what list_events and event_feed give. */
export type EventEnvelope = components['schemas']['EventEnvelope'];
export type EventFeedResponse = components['schemas']['EventFeedResponse'];
export type ListEventsRequest = components['schemas']['ListEventsRequest'];
export type ListEventsResponse = components['schemas']['ListEventsResponse'];
export type EventTypeFilter = components['schemas']['EventTypeFilter'];
export type MailboxId = components['schemas']['MailboxId'];
/** The body of every error answer. */
export type ErrorBody = components['schemas']['Error'];
/** The contract's error codes. */
export type ErrorCode = ErrorBody['error']['code'];
