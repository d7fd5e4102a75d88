import type { Permission } from '../../generated/types.ts';
import { forbidden } from '../base/errors.ts';

/** What a key may do: the contract's `Permission` schema. */
export type { Permission };

/** One entry per permission of the contract: the compiler refuses one missing or one it does not have. */
const EVERY_PERMISSION: { readonly [P in Permission]: true } = { read: true, write: true, admin: true };
/** Every permission of the contract. */
export const PERMISSIONS: readonly Permission[] = Object.keys(EVERY_PERMISSION) as Permission[];

/** Who is calling: the key's workspace, what it may do, and which mailboxes it may see. */
export interface Principal {
  keyId: string;
  workspaceId: string;
  permissions: ReadonlySet<Permission>;
  /** null: every mailbox of the workspace. */
  mailboxes: readonly string[] | null;
}

declare const holds: unique symbol;

/**
 * A principal proven to hold `P` (permit): an operation typed to need `P` cannot be given a caller
 * that was not checked, so the permission is checked once, where the call is answered, and nowhere else.
 */
export type Permitted<P extends Permission> = Principal & { readonly [holds]: { [K in P]: true } };

/** The principal, once it holds `permission`; forbidden otherwise. */
export function permit<P extends Permission>(principal: Principal, permission: P): Permitted<P> {
  if (!principal.permissions.has(permission)) throw forbidden(`this key lacks the "${permission}" permission`);
  return principal as Permitted<P>;
}

/** What sees every mailbox (webhook endpoints, say) is refused to a key restricted to some. */
export function requireWholeWorkspace(principal: Principal, what: string): void {
  if (principal.mailboxes !== null) throw forbidden(`a key restricted to mailboxes cannot ${what}`);
}
