import type { OperationInput } from '../../generated/operations.ts';
import type { RedeliverWebhookResponse } from '../../generated/types.ts';
import { invalidArgument, RateLimitedError } from '../base/errors.ts';
import { assertCursorNotExpired } from '../feed/expiry.ts';
import { matchesTypes } from '../contract/type-filter.ts';
import { FeedScope } from '../feed/scope.ts';
import { requireWholeWorkspace } from '../auth/principal.ts';
import type { OperationContext } from './context.ts';

/** The quota when the service is not told otherwise (WEBHOOK_REDELIVER_MAX_PENDING). */
export const DEFAULT_REDELIVER_MAX_PENDING = 10_000;

// When a refused caller may try again: a backlog at the quota takes at least this long to drain.
const QUOTA_RETRY_AFTER_SECONDS = 60;

/**
 * redeliver_webhook: schedules the events after a cursor for delivery again to one endpoint. What
 * one call may add is bounded three ways: `limit` (at most 1,000 events read, in the contract), an
 * event already pending for the endpoint is not queued again (a unique index), and nothing is
 * queued past the endpoint's quota of pending deliveries (429 rate_limited once it is reached).
 */
export async function redeliverWebhook(
  ctx: OperationContext<'admin'>,
  input: OperationInput<'redeliver_webhook'>,
): Promise<RedeliverWebhookResponse> {
  requireWholeWorkspace(ctx.principal, 'manage webhooks: endpoints see every mailbox');
  const { workspaceId } = ctx.principal;
  const endpoint = await ctx.store.webhooks.findEndpoint(workspaceId, input.url);
  if (!endpoint) throw invalidArgument('no webhook endpoint has this url in this workspace');
  const afterSeq = input.after === undefined ? await ctx.store.prunedThrough(workspaceId) : ctx.cursors.decode(workspaceId, input.after);
  const maxPending = ctx.webhookRedeliverMaxPending ?? DEFAULT_REDELIVER_MAX_PENDING;
  const now = ctx.clock.now().getTime();
  const types = JSON.parse(endpoint.event_types) as string[];

  const events = await ctx.store.eventsAfter(workspaceId, afterSeq, input.limit);
  if (input.after !== undefined) await assertCursorNotExpired(ctx.store, workspaceId, FeedScope.WHOLE, afterSeq);

  const { scheduled, lastSeq } = await ctx.store.write(async (tx) => {
    // One redelivery at a time per endpoint, so that calls racing each other cannot together go past the quota.
    await tx.lockEndpoint(endpoint.id);
    const room = maxPending - (await tx.pendingCountUpTo(endpoint.id, maxPending));
    if (room <= 0) {
      throw new RateLimitedError(
        'quota',
        `this endpoint already has ${maxPending} pending deliveries, the most redeliver_webhook lets wait for one endpoint: retry once some are delivered${endpoint.enabled ? '' : ' (the endpoint is disabled: enable it first)'}`,
        { 'Retry-After': String(QUOTA_RETRY_AFTER_SECONDS) },
      );
    }
    const matching = events.filter((event) => matchesTypes(types, event.type));
    // Past the room left, stop: the cursor answered then points after the last event taken.
    const taken = matching.length > room ? matching.slice(0, room) : matching;
    const queued = await tx.queueDeliveries(endpoint.id, workspaceId, taken, now);
    const through = matching.length > room ? Number(taken.at(-1)!.seq) : events.length ? Number(events.at(-1)!.seq) : undefined;
    return { scheduled: queued, lastSeq: through };
  });
  return {
    scheduled,
    next_cursor:
      lastSeq !== undefined ? ctx.cursors.encode(workspaceId, lastSeq) : (input.after ?? ctx.cursors.encode(workspaceId, afterSeq)),
  };
}
