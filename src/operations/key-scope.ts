import type { ApiKey } from '../../generated/types.ts';
import type { Principal } from '../auth/principal.ts';

/**
 * Whether a key lies within what the caller may manage: anything of the workspace for an
 * unrestricted caller; for a caller restricted to mailboxes, only keys restricted to some of its
 * own (an unrestricted key sees mailboxes the caller does not). These are the keys it could have
 * created: it lists and revokes those, itself included.
 */
export function withinCallerScope(caller: Principal, key: Pick<ApiKey, 'mailboxes'>): boolean {
  if (caller.mailboxes === null) return true;
  if (key.mailboxes === null) return false;
  const own = new Set(caller.mailboxes);
  return key.mailboxes.every((mailbox) => own.has(mailbox));
}
