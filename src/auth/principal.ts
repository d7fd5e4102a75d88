import type { Permission } from '../../generated/types.ts';

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
