import type { CreateKeyRequest, CreateKeyResponse } from '../../generated/types.ts';
import { keyView, newKey } from '../auth/api-keys.ts';
import { forbidden, invalidArgument } from '../base/errors.ts';
import type { OperationContext } from './context.ts';

/** A key-creation flood stops here: each key is a row kept until revoked, and a secret to keep track of. */
export const MAX_ACTIVE_KEYS_PER_WORKSPACE = 1000;

/** create_key: a key of the caller's workspace, never with more rights than the caller's. Uses only the store and the clock: the CLI runs it too (createKeyAsOperator). */
export async function createApiKey(
  ctx: Pick<OperationContext<'admin'>, 'store' | 'clock' | 'principal'>,
  input: CreateKeyRequest,
): Promise<CreateKeyResponse> {
  const { principal } = ctx;
  const lacking = input.permissions.filter((permission) => !principal.permissions.has(permission));
  if (lacking.length) throw forbidden(`a key cannot give rights it does not have: this key lacks "${lacking.join('", "')}"`);
  if (principal.mailboxes !== null) {
    if (input.mailboxes === undefined) {
      throw forbidden('this key is restricted to mailboxes: it creates only keys restricted to some of them (pass "mailboxes")');
    }
    const own = new Set(principal.mailboxes);
    const outside = input.mailboxes.find((mailbox) => !own.has(mailbox));
    if (outside !== undefined) throw forbidden(`this key may not give access to mailbox "${outside}"`);
  }
  const { workspaceId } = principal;
  const now = ctx.clock.now().getTime();

  return ctx.store.write(async (tx) => {
    // Creations in one workspace take turns so the count holds until the insert commits: see set_webhook.
    await tx.lockWorkspace(workspaceId);
    if ((await tx.countActiveKeys(workspaceId)) >= MAX_ACTIVE_KEYS_PER_WORKSPACE) {
      throw invalidArgument(
        `a workspace has at most ${MAX_ACTIVE_KEYS_PER_WORKSPACE} active keys: revoke one (revoke_key) before creating another`,
      );
    }
    const created = newKey({ workspaceId, permissions: input.permissions, mailboxes: input.mailboxes ?? null, label: input.label }, now);
    await tx.insertKey(created.row);
    return { api_key: keyView((await tx.findKey(workspaceId, created.id))!), key: created.key };
  });
}
