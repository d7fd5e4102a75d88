import type {
  CreateKeyRequest,
  EmitEventRequest,
  EventFeedRequest,
  ListEventsRequest,
  ListKeysRequest,
  RedeliverWebhookRequest,
  RevokeKeyRequest,
  SetWebhookRequest,
} from '../../generated/types.ts';
import { feedPageJson } from '../feed/page.ts';
import type { OperationContext } from './context.ts';
import { createApiKey } from './create-key.ts';
import { emitEvent, emitEventJson } from './emit-event.ts';
import { eventFeed } from './event-feed.ts';
import { listEvents, listPageJson } from './list-events.ts';
import { listApiKeys } from './list-keys.ts';
import { listWebhooks } from './list-webhooks.ts';
import { redeliverWebhook } from './redeliver-webhook.ts';
import { revokeApiKey } from './revoke-key.ts';
import { setWebhook } from './set-webhook.ts';

/** What an operation answers: its response body as JSON text (or chunks of its UTF-8 bytes), and whether it created something. */
export interface OperationOutcome {
  json: string | Buffer[];
  created: boolean;
}

export type OperationRunner = (ctx: OperationContext, input: any) => Promise<OperationOutcome>;

/** Every operation of the contract by operationId: the only thing the transports call. */
export const operations: Record<string, OperationRunner> = {
  event_feed: async (ctx, input: EventFeedRequest) => ({ json: feedPageJson(await eventFeed(ctx, input)), created: false }),
  // 200 whatever the outcome (the body says it): the contract documents no 201 for set_webhook.
  set_webhook: async (ctx, input: SetWebhookRequest) => ({ json: JSON.stringify(await setWebhook(ctx, input)), created: false }),
  list_webhooks: async (ctx) => ({ json: JSON.stringify(await listWebhooks(ctx)), created: false }),
  redeliver_webhook: async (ctx, input: RedeliverWebhookRequest) => ({ json: JSON.stringify(await redeliverWebhook(ctx, input)), created: false }),
  emit_event: async (ctx, input: EmitEventRequest) => {
    const published = await emitEvent(ctx, input);
    return { json: emitEventJson(published), created: published.created };
  },
  list_events: async (ctx, input: ListEventsRequest) => ({ json: listPageJson(await listEvents(ctx, input)), created: false }),
  create_key: async (ctx, input: CreateKeyRequest) => ({ json: JSON.stringify(await createApiKey(ctx, input)), created: true }),
  list_keys: async (ctx, input: ListKeysRequest) => ({ json: JSON.stringify(await listApiKeys(ctx, input)), created: false }),
  revoke_key: async (ctx, input: RevokeKeyRequest) => ({ json: JSON.stringify(await revokeApiKey(ctx, input)), created: false }),
};

/** An outcome's body as one string (for the transports that need the object, not the bytes). */
export const outcomeText = (json: OperationOutcome['json']): string => (typeof json === 'string' ? json : Buffer.concat(json).toString('utf8'));
