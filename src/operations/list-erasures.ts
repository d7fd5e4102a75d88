import type { OperationInput } from '../../generated/operations.ts';
import type { ListErasuresResponse } from '../../generated/types.ts';
import { erasureView } from '../erasure/erasure-view.ts';
import { requireWorkspaceAdmin, type OperationContext } from './context.ts';

/** list_erasures: the workspace's erasure log, newest first. */
export async function listErasures(ctx: OperationContext, input: OperationInput<'list_erasures'>): Promise<ListErasuresResponse> {
  requireWorkspaceAdmin(ctx.principal);
  return { erasures: (await ctx.store.erasures.list(ctx.principal.workspaceId, input.limit)).map(erasureView) };
}
