import type { EmitEventRequest, EventFeedRequest } from '../../generated/types.ts';
import { feedPageJson } from '../feed/page.ts';
import type { OperationContext } from './context.ts';
import { emitEvent, emitEventJson } from './emit-event.ts';
import { eventFeed } from './event-feed.ts';

/** What an operation answers: its response body as JSON text, and whether it created something. */
export interface OperationOutcome {
  json: string;
  created: boolean;
}

export type OperationRunner = (ctx: OperationContext, input: any) => Promise<OperationOutcome>;

/** Every operation of the contract by operationId: the only thing the transports call. */
export const operations: Record<string, OperationRunner> = {
  event_feed: async (ctx, input: EventFeedRequest) => ({ json: feedPageJson(await eventFeed(ctx, input)), created: false }),
  emit_event: async (ctx, input: EmitEventRequest) => {
    const published = await emitEvent(ctx, input);
    return { json: emitEventJson(published), created: published.created };
  },
};
