export const PERMISSIONS = ['read', 'write', 'admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** Who is calling: the key's workspace, what it may do, and which mailboxes it may see. */
export interface Principal {
  keyId: string;
  workspaceId: string;
  permissions: ReadonlySet<Permission>;
  /** null: every mailbox of the workspace. */
  mailboxes: readonly string[] | null;
}
