import type { OperationInput } from '../../generated/operations.ts';
import type { RotateSecretResponse } from '../../generated/types.ts';
import { invalidArgument } from '../base/errors.ts';
import { endpointView } from '../webhooks/endpoint-view.ts';
import { rotatedSecret } from '../webhooks/rotation.ts';
import { requireWholeWorkspace } from '../auth/principal.ts';
import type { OperationContext } from './context.ts';

/**
 * rotate_secret: a new signing secret for one endpoint, shown in full in this answer only; the
 * replaced one keeps signing deliveries (a second signature) for `grace_seconds`.
 */
export async function rotateSecret(ctx: OperationContext<'admin'>, input: OperationInput<'rotate_secret'>): Promise<RotateSecretResponse> {
  requireWholeWorkspace(ctx.principal, 'manage webhooks: endpoints see every mailbox');
  const { workspaceId } = ctx.principal;
  const now = ctx.clock.now().getTime();
  return ctx.store.write(async (tx) => {
    const found = await tx.findEndpoint(workspaceId, input.url);
    if (!found) throw invalidArgument('no webhook endpoint has this url in this workspace');
    // Rotations of one endpoint take turns, and each reads the secret after the lock: two at once
    // must not both keep the same old secret, losing the one the first answered.
    await tx.lockEndpoint(found.id);
    const existing = (await tx.findEndpoint(workspaceId, input.url)) ?? found;
    const changes = { ...rotatedSecret(existing, now, input.grace_seconds), updated_at: now };
    await tx.updateEndpoint(existing.id, changes);
    return { endpoint: endpointView({ ...existing, ...changes }, now, true) };
  });
}
