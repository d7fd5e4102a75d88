import type { TestWebhookRequest, TestWebhookResponse } from '../../generated/types.ts';
import { invalidArgument, RateLimitedError } from '../base/errors.ts';
import { sendTestDelivery } from '../webhooks/test-delivery.ts';
import { requireWholeWorkspace } from '../auth/principal.ts';
import type { OperationContext } from './context.ts';

/**
 * One test delivery per URL of a workspace per this many seconds, whichever instance is asked and
 * whether or not its endpoint was removed and set again meanwhile: with the key's rate budget
 * alone, an admin key could make the service POST to a third party's URL a hundred times a second.
 */
export const TEST_WEBHOOK_COOLDOWN_SECONDS = 5;

/** test_webhook: a signed test delivery to one endpoint, now, and what it answered. Writes nothing but the cooldown. */
export async function testWebhook(ctx: OperationContext<'admin'>, input: TestWebhookRequest): Promise<TestWebhookResponse> {
  requireWholeWorkspace(ctx.principal, 'manage webhooks: endpoints see every mailbox');
  const endpoint = await ctx.store.webhooks.findEndpoint(ctx.principal.workspaceId, input.url);
  if (!endpoint) throw invalidArgument('no webhook endpoint has this url in this workspace');
  const now = ctx.clock.now().getTime();
  const slot = await ctx.store.webhooks.claimTestSlot(ctx.principal.workspaceId, endpoint.url, now, TEST_WEBHOOK_COOLDOWN_SECONDS * 1000);
  if (!slot.claimed) {
    const seconds = Math.ceil(slot.waitMs / 1000);
    throw new RateLimitedError(
      'quota',
      `this URL was tested less than ${TEST_WEBHOOK_COOLDOWN_SECONDS} seconds ago; retry in ${seconds} seconds`,
      { 'Retry-After': String(seconds) },
    );
  }
  return sendTestDelivery(endpoint, now, ctx.webhookPolicy ?? { allowInsecure: false }, ctx.webhookTimeoutMs ?? 10_000);
}
