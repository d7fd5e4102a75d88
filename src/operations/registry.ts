import {
  OPERATION_DEFAULTS,
  type OperationId,
  type OperationInput,
  type OperationOutput,
  type Operations,
} from '../../generated/operations.ts';
import { feedPageJson } from '../feed/page.ts';
import type { SharedReadMemory } from '../feed/shared-reads.ts';
import type { OperationContext } from './context.ts';
import { createApiKey } from './create-key.ts';
import { emitEvent, emitEventJson } from './emit-event.ts';
import { erasePerson } from './erase-person.ts';
import { erasureStatus } from './erasure-status.ts';
import { eventFeed, type FeedWait } from './event-feed.ts';
import { feedCursor } from './feed-cursor.ts';
import { listEvents, listPageJson } from './list-events.ts';
import { listErasures } from './list-erasures.ts';
import { listApiKeys } from './list-keys.ts';
import { listWebhooks } from './list-webhooks.ts';
import { redeliverWebhook } from './redeliver-webhook.ts';
import { revokeApiKey } from './revoke-key.ts';
import { rotateSecret } from './rotate-secret.ts';
import { setWebhook } from './set-webhook.ts';
import { streamToken } from './stream-token.ts';
import { testWebhook } from './test-webhook.ts';

export type { OperationId, OperationInput, OperationOutput };

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

/** What an operation answers: its response body, and whether it created something (201). */
export interface OperationOutcome<Id extends OperationId = OperationId> {
  json: JsonBody<OperationOutput<Id>>;
  created: boolean;
}

/** How an edge asks an operation to answer, beyond its request: event_feed may be held (`Prefer: wait`). */
export interface CallOptions {
  wait?: FeedWait;
  /** event_feed: admits the page's memory once a page is to be read (FeedView.admit). */
  admit?: () => Promise<void>;
  /** event_feed: the memory of a first read shared with identical ones (FeedView.firstReadMemory). */
  firstReadMemory?: SharedReadMemory;
}

type Runner<Id extends OperationId> = (
  ctx: OperationContext,
  input: OperationInput<Id>,
  options: CallOptions,
) => Promise<OperationOutcome<Id>>;

/** Every operation of the contract by operationId, each with its own input and output types. */
const runners: { readonly [Id in OperationId]: Runner<Id> } = {
  event_feed: async (ctx, input, options) => ({
    json: splicedAs(
      feedPageJson(await eventFeed(ctx, input, { wait: options.wait, admit: options.admit, firstReadMemory: options.firstReadMemory })),
    ),
    created: false,
  }),
  stream_token: async (ctx, input) => ({ json: jsonOf(streamToken(ctx, input)), created: false }),
  feed_cursor: async (ctx, input) => ({ json: jsonOf((await feedCursor(ctx, input)).body), created: false }),
  // 200 whatever the outcome (the body says it): the contract documents no 201 for set_webhook.
  set_webhook: async (ctx, input) => ({ json: jsonOf(await setWebhook(ctx, input)), created: false }),
  list_webhooks: async (ctx) => ({ json: jsonOf(await listWebhooks(ctx)), created: false }),
  redeliver_webhook: async (ctx, input) => ({ json: jsonOf(await redeliverWebhook(ctx, input)), created: false }),
  test_webhook: async (ctx, input) => ({ json: jsonOf(await testWebhook(ctx, input)), created: false }),
  rotate_secret: async (ctx, input) => ({ json: jsonOf(await rotateSecret(ctx, input)), created: false }),
  emit_event: async (ctx, input) => {
    const published = await emitEvent(ctx, input);
    return { json: splicedAs(emitEventJson(published)), created: published.created };
  },
  list_events: async (ctx, input) => ({ json: splicedAs(listPageJson(await listEvents(ctx, input))), created: false }),
  create_key: async (ctx, input) => ({ json: jsonOf(await createApiKey(ctx, input)), created: true }),
  list_keys: async (ctx, input) => ({ json: jsonOf(await listApiKeys(ctx, input)), created: false }),
  revoke_key: async (ctx, input) => ({ json: jsonOf(await revokeApiKey(ctx, input)), created: false }),
  erase_person: async (ctx, input) => ({ json: jsonOf(await erasePerson(ctx, input)), created: false }),
  erasure_status: async (ctx, input) => ({ json: jsonOf(await erasureStatus(ctx, input)), created: false }),
  list_erasures: async (ctx, input) => ({ json: jsonOf(await listErasures(ctx, input)), created: false }),
};

/**
 * A validated request as the operation runs it: what it omitted, the schema's default (the one
 * place defaults are applied; OPERATION_DEFAULTS holds them).
 */
export function withDefaults<Id extends OperationId>(operationId: Id, request: Operations[Id]['request']): OperationInput<Id> {
  // What OperationInput<Id> says, which TypeScript cannot follow through a spread of generic types.
  return { ...OPERATION_DEFAULTS[operationId], ...request } as unknown as OperationInput<Id>;
}

/** Runs an operation on its validated request: the only way the edges call one. */
export function runOperation<Id extends OperationId>(
  operationId: Id,
  ctx: OperationContext,
  request: Operations[Id]['request'],
  options: CallOptions = {},
): Promise<OperationOutcome<Id>> {
  const run: Runner<Id> = runners[operationId];
  return run(ctx, withDefaults(operationId, request), options);
}

/** An outcome's body as one string (for the transports that need the object, not the bytes). */
export const outcomeText = (json: string | Buffer[]): string => (typeof json === 'string' ? json : Buffer.concat(json).toString('utf8'));
