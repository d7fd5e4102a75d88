import type { ListWebhooksResponse } from '../../generated/types.ts';
import { endpointView, listEndpoints, pendingCount, recentAttempts } from '../webhooks/store.ts';
import { requireWorkspaceAdmin, type OperationContext } from './context.ts';

/** list_webhooks: every endpoint with its backlog and recent attempts; never a secret. */
export async function listWebhooks(ctx: OperationContext): Promise<ListWebhooksResponse> {
  requireWorkspaceAdmin(ctx.principal);
  const endpoints = await listEndpoints(ctx.db, ctx.principal.workspaceId);
  return {
    webhooks: await Promise.all(
      endpoints.map(async (row) => ({
        endpoint: endpointView(row),
        pending_deliveries: await pendingCount(ctx.db, row.id),
        recent_attempts: await recentAttempts(ctx.db, row.id),
      })),
    ),
  };
}
