import type { ListWebhooksResponse } from '../../generated/types.ts';
import { endpointView } from '../webhooks/endpoint-view.ts';
import { requireWholeWorkspace } from '../auth/principal.ts';
import type { OperationContext } from './context.ts';

/** How many of each endpoint's last attempts its success rate is taken over. */
export const HEALTH_WINDOW = 100;

/** list_webhooks: every endpoint with its backlog, its health over its last attempts, and recent attempts; never a secret. */
export async function listWebhooks(ctx: OperationContext<'admin'>): Promise<ListWebhooksResponse> {
  requireWholeWorkspace(ctx.principal, 'manage webhooks: endpoints see every mailbox');
  const endpoints = await ctx.store.webhooks.listEndpoints(ctx.principal.workspaceId);
  const now = ctx.clock.now().getTime();
  return {
    webhooks: await Promise.all(
      endpoints.map(async (row) => {
        const health = await ctx.store.webhooks.attemptHealth(row.id, HEALTH_WINDOW);
        return {
          endpoint: endpointView(row, now),
          pending_deliveries: await ctx.store.webhooks.pendingCount(row.id),
          health: {
            window: HEALTH_WINDOW,
            attempts: health.attempts,
            delivered: health.delivered,
            success_rate: health.attempts === 0 ? null : Math.round((health.delivered / health.attempts) * 1000) / 1000,
          },
          recent_attempts: await ctx.store.webhooks.recentAttempts(row.id),
        };
      }),
    ),
  };
}
