import type { OperationInput } from '../../generated/operations.ts';
import type { ErasureStatusResponse } from '../../generated/types.ts';
import { erasureView } from '../erasure/erasure-view.ts';
import { invalidArgument } from '../base/errors.ts';
import { requireWholeWorkspace } from '../auth/principal.ts';
import type { OperationContext } from './context.ts';

/** erasure_status: one erasure of the caller's workspace, now. */
export async function erasureStatus(
  ctx: OperationContext<'admin'>,
  input: OperationInput<'erasure_status'>,
): Promise<ErasureStatusResponse> {
  requireWholeWorkspace(ctx.principal, 'erase a person: erasure covers every mailbox of the workspace');
  const row = await ctx.store.erasures.byId(ctx.principal.workspaceId, input.id);
  if (!row) throw invalidArgument('no erasure has this id in this workspace');
  return { erasure: erasureView(row) };
}
