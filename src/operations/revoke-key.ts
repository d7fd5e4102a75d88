import type { RevokeKeyRequest, RevokeKeyResponse } from '../../generated/types.ts';
import { keyView } from '../auth/api-keys.ts';
import { revokeKeyEverywhere } from '../auth/revoke-everywhere.ts';
import { forbidden, invalidArgument } from '../base/errors.ts';
import type { OperationContext } from './context.ts';
import { withinCallerScope } from './key-scope.ts';

/** revoke_key: refused by every instance once the call answers. */
export async function revokeApiKey(ctx: OperationContext<'admin'>, input: RevokeKeyRequest): Promise<RevokeKeyResponse> {
  const { principal } = ctx;
  const { workspaceId } = principal;
  // A key of another workspace is answered like one that does not exist.
  const stored = await ctx.store.keys.find(workspaceId, input.id);
  const key = stored && keyView(stored);
  if (!key) throw invalidArgument(`no key ${input.id} in this workspace`);
  if (!withinCallerScope(principal, key))
    throw forbidden('a key restricted to mailboxes revokes only keys restricted within its mailboxes');
  if (key.revoked_at !== null) return { api_key: key, outcome: 'already_revoked' };
  const revoked = await revokeKeyEverywhere(ctx.store, key.id, ctx.clock.now().getTime(), ctx.changes.keys);
  return { api_key: keyView((await ctx.store.keys.find(workspaceId, key.id))!), outcome: revoked ? 'revoked' : 'already_revoked' };
}
