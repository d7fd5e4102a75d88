import type { ListWebhooksResponse } from '../../generated/types.ts';
import { endpointView } from '../webhooks/endpoint-view.ts';
import { requireWorkspaceAdmin, type OperationContext } from './context.ts';

/** list_webhooks: every endpoint with its backlog and recent attempts; never a secret. */
export async function listWebhooks(ctx: OperationContext): Promise<ListWebhooksResponse> {
  requireWorkspaceAdmin(ctx.principal);
  const endpoints = await ctx.store.webhooks.listEndpoints(ctx.principal.workspaceId);
  return {
    webhooks: await Promise.all(
      endpoints.map(async (row) => ({
        endpoint: endpointView(row),
        pending_deliveries: await ctx.store.webhooks.pendingCount(row.id),
        recent_attempts: await ctx.store.webhooks.recentAttempts(row.id),
      })),
    ),
  };
}
