import type { OperationInput } from '../../generated/operations.ts';
import type { ListErasuresResponse } from '../../generated/types.ts';
import { erasureView } from '../erasure/erasure-view.ts';
import { requireWholeWorkspace } from '../auth/principal.ts';
import type { OperationContext } from './context.ts';

/** list_erasures: the workspace's erasure log, newest first. */
export async function listErasures(ctx: OperationContext<'admin'>, input: OperationInput<'list_erasures'>): Promise<ListErasuresResponse> {
  requireWholeWorkspace(ctx.principal, 'erase a person: erasure covers every mailbox of the workspace');
  return { erasures: (await ctx.store.erasures.list(ctx.principal.workspaceId, input.limit)).map(erasureView) };
}
