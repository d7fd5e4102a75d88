import {
  OPERATION_DEFAULTS,
  type OperationId,
  type OperationInput,
  type OperationOutput,
  type Operations,
  type PermissionOf,
} from '../../generated/operations.ts';
import { feedPageJson, type FeedPage } from '../feed/page.ts';
import type { PublishedEvent } from '../feed/published-event.ts';
import type { OperationContext } from './context.ts';
import { createApiKey } from './create-key.ts';
import { emitEvent, emitEventJson } from './emit-event.ts';
import { erasePerson } from './erase-person.ts';
import { erasureStatus } from './erasure-status.ts';
import { eventFeed, type ReadView } from './event-feed.ts';
import { feedCursor, type FeedPosition } from './feed-cursor.ts';
import { listEvents, listPageJson, type ListPage } from './list-events.ts';
import { listErasures } from './list-erasures.ts';
import { listApiKeys } from './list-keys.ts';
import { listWebhooks } from './list-webhooks.ts';
import { redeliverWebhook } from './redeliver-webhook.ts';
import { revokeApiKey } from './revoke-key.ts';
import { rotateSecret } from './rotate-secret.ts';
import { setWebhook } from './set-webhook.ts';
import { streamToken } from './stream-token.ts';
import { testWebhook } from './test-webhook.ts';

export type { OperationId, OperationInput, OperationOutput, ReadView };

declare const body: unique symbol;

/**
 * A response body as JSON text, or the chunks of its UTF-8 bytes (a page spliced from stored
 * envelopes), marked with the shape it holds so that an operation cannot answer another's body.
 */
export type JsonBody<T> = (string | Buffer[]) & { readonly [body]?: T };

/** A body serialized from its object. */
export const jsonOf = <T>(value: T): JsonBody<T> => JSON.stringify(value) as JsonBody<T>;
/** A body spliced from stored bytes (feedPageJson, listPageJson): the splicer answers for its shape. */
const splicedAs = <T>(json: string | Buffer[]): JsonBody<T> => json as JsonBody<T>;

/**
 * What an operation answers: its response body, whether it created something (201), and its
 * result as the operation gave it (a feed page with its facts, a position: what a held read, a
 * stream or an MCP text needs beyond the bytes).
 */
export interface OperationOutcome<Id extends OperationId = OperationId> {
  json: JsonBody<OperationOutput<Id>>;
  created: boolean;
  result: OperationResult<Id>;
}

/** What the operations whose callers look past the body give (others: their response object). */
interface Results {
  event_feed: FeedPage;
  feed_cursor: FeedPosition;
  list_events: ListPage;
  emit_event: PublishedEvent;
}
export type OperationResult<Id extends OperationId> = Id extends keyof Results ? Results[Id] : OperationOutput<Id>;

type Runner<Id extends OperationId> = (
  ctx: OperationContext<PermissionOf<Id>>,
  input: OperationInput<Id>,
  view: ReadView,
) => Promise<OperationOutcome<Id>>;

/** Every operation of the contract by operationId, each with its own input and output types. */
const runners: { readonly [Id in OperationId]: Runner<Id> } = {
  event_feed: async (ctx, input, view) => {
    const page = await eventFeed(ctx, input, view);
    return { json: splicedAs(feedPageJson(page)), created: false, result: page };
  },
  stream_token: async (ctx, input) => answered(streamToken(ctx, input)),
  feed_cursor: async (ctx, input) => {
    const position = await feedCursor(ctx, input);
    return { json: jsonOf(position.body), created: false, result: position };
  },
  // 200 whatever the outcome (the body says it): the contract documents no 201 for set_webhook.
  set_webhook: async (ctx, input) => answered(await setWebhook(ctx, input)),
  list_webhooks: async (ctx) => answered(await listWebhooks(ctx)),
  redeliver_webhook: async (ctx, input) => answered(await redeliverWebhook(ctx, input)),
  test_webhook: async (ctx, input) => answered(await testWebhook(ctx, input)),
  rotate_secret: async (ctx, input) => answered(await rotateSecret(ctx, input)),
  emit_event: async (ctx, input) => {
    const published = await emitEvent(ctx, input);
    return { json: splicedAs(emitEventJson(published)), created: published.created, result: published };
  },
  list_events: async (ctx, input) => {
    const page = await listEvents(ctx, input);
    return { json: splicedAs(listPageJson(page)), created: false, result: page };
  },
  create_key: async (ctx, input) => answered(await createApiKey(ctx, input), true),
  list_keys: async (ctx, input) => answered(await listApiKeys(ctx, input)),
  revoke_key: async (ctx, input) => answered(await revokeApiKey(ctx, input)),
  erase_person: async (ctx, input) => answered(await erasePerson(ctx, input)),
  erasure_status: async (ctx, input) => answered(await erasureStatus(ctx, input)),
  list_erasures: async (ctx, input) => answered(await listErasures(ctx, input)),
};

/** An answer that is its response object, serialized. */
function answered<T>(value: T, created = false): { json: JsonBody<T>; created: boolean; result: T } {
  return { json: jsonOf(value), created, result: value };
}

/**
 * A validated request as the operation runs it: what it omitted, the schema's default (the one
 * place defaults are applied; OPERATION_DEFAULTS holds them).
 */
export function withDefaults<Id extends OperationId>(operationId: Id, request: Operations[Id]['request']): OperationInput<Id> {
  // What OperationInput<Id> says, which TypeScript cannot follow through a spread of generic types.
  return { ...OPERATION_DEFAULTS[operationId], ...request } as unknown as OperationInput<Id>;
}

/**
 * Runs an operation on its validated request, for a caller proven to hold its permission (permit):
 * the only way in, for the calls (answerOperation, heldRead, streamReads) and the library alike.
 * `view` says how a feed read is made (ReadView); the other operations ignore it.
 */
export function runOperation<Id extends OperationId>(
  operationId: Id,
  ctx: OperationContext<PermissionOf<Id>>,
  request: Operations[Id]['request'],
  view: ReadView = {},
): Promise<OperationOutcome<Id>> {
  const run: Runner<Id> = runners[operationId];
  return run(ctx, withDefaults(operationId, request), view);
}
