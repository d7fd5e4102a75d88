import type { SetWebhookRequest, SetWebhookResponse } from '../../generated/types.ts';
import { invalidArgument } from '../base/errors.ts';
import { newWebhookEndpointId } from '../base/ids.ts';
import type { EndpointRow } from '../store/port.ts';
import { newSigningSecret } from '../webhooks/signature.ts';
import { endpointView } from '../webhooks/endpoint-view.ts';
import { DEFAULT_ROTATION_GRACE_SECONDS, rotatedSecret } from '../webhooks/rotation.ts';
import { urlProblem } from '../net/target-policy.ts';
import { requireWholeWorkspace } from '../auth/principal.ts';
import type { OperationContext } from './context.ts';

export const MAX_ENDPOINTS_PER_WORKSPACE = 20;

/** set_webhook: creates, updates or removes the workspace's endpoint for a URL. */
export async function setWebhook(ctx: OperationContext<'admin'>, input: SetWebhookRequest): Promise<SetWebhookResponse> {
  requireWholeWorkspace(ctx.principal, 'manage webhooks: endpoints see every mailbox');
  const { workspaceId } = ctx.principal;
  const now = ctx.clock.now().getTime();

  return ctx.store.write(async (tx) => {
    const existing = await tx.findEndpoint(workspaceId, input.url);
    if (input.remove) {
      if (!existing) throw invalidArgument('no webhook endpoint has this url in this workspace');
      await tx.removeEndpoint(existing.id);
      return { endpoint: endpointView(existing, now), outcome: 'removed' };
    }
    const problem = urlProblem(input.url, ctx.webhookPolicy ?? { allowInsecure: false });
    if (problem) throw invalidArgument(problem);

    if (!existing) {
      // Creations in one workspace take turns, so the count below stays true until the insert
      // commits (under READ COMMITTED two creations would each count 19 and both insert).
      await tx.lockWorkspace(workspaceId);
      if ((await tx.countEndpoints(workspaceId)) >= MAX_ENDPOINTS_PER_WORKSPACE)
        throw invalidArgument(`a workspace has at most ${MAX_ENDPOINTS_PER_WORKSPACE} webhook endpoints`);
      const row: EndpointRow = {
        id: newWebhookEndpointId(),
        workspace_id: workspaceId,
        url: input.url,
        event_types: JSON.stringify(input.event_types ?? []),
        enabled: input.enabled ?? true,
        disabled_reason: null,
        disabled_at: null,
        secret: newSigningSecret(),
        previous_secret: null,
        previous_secret_expires_at: null,
        last_tested_at: null,
        created_at: now,
        updated_at: now,
      };
      await tx.insertEndpoint(row);
      return { endpoint: endpointView(row, now, true), outcome: 'created' };
    }

    const changes: Partial<EndpointRow> = { updated_at: now };
    if (input.event_types !== undefined) changes.event_types = JSON.stringify(input.event_types);
    if (input.enabled !== undefined) {
      changes.enabled = input.enabled;
      if (input.enabled) Object.assign(changes, { disabled_reason: null, disabled_at: null });
    }
    // As rotate_secret with its default grace: the replaced secret keeps signing for a day.
    if (input.rotate_secret) Object.assign(changes, rotatedSecret(existing, now, DEFAULT_ROTATION_GRACE_SECONDS));
    await tx.updateEndpoint(existing.id, changes);
    return { endpoint: endpointView({ ...existing, ...changes }, now, Boolean(input.rotate_secret)), outcome: 'updated' };
  });
}
