/**
 * What API keys and workspaces ask of storage (KeyStore). Rows come decoded: a key's permissions
 * and mailboxes as lists, whatever the columns hold.
 */
import type { Permission } from '../../../generated/types.ts';

export type { Permission } from '../../../generated/types.ts';

export interface Workspace {
  id: string;
  name: string;
  verified: boolean;
}

/** An API key as stored: what authentication checks a token against. */
export interface KeyRow {
  id: string;
  workspace_id: string;
  secret_sha256: string;
  /** In the order they were given; a name this service does not know is left out. */
  permissions: readonly Permission[];
  /** null: every mailbox. */
  mailboxes: readonly string[] | null;
  revoked_at: number | null;
}

/** A key as listed: everything but its secret's hash. */
export interface KeyListRow {
  id: string;
  workspace_id: string;
  permissions: readonly Permission[];
  /** null: every mailbox. */
  mailboxes: readonly string[] | null;
  label: string | null;
  created_at: number;
  revoked_at: number | null;
}

export interface NewKeyRow {
  id: string;
  workspace_id: string;
  secret_sha256: string;
  permissions: readonly Permission[];
  mailboxes: readonly string[] | null;
  label: string | null;
  created_at: number;
}

export interface KeyStore {
  createWorkspace(name: string, verified: boolean, now: number): Promise<Workspace>;
  findWorkspace(id: string): Promise<Workspace | undefined>;
  countWorkspaces(): Promise<number>;
  listWorkspaces(): Promise<Array<Workspace & { created_at: string }>>;

  keys: {
    /** The key row a token names, revoked or not. */
    byId(keyId: string): Promise<KeyRow | undefined>;
    insert(row: NewKeyRow): Promise<void>;
    /** Every key of a workspace, oldest first. */
    list(workspaceId: string): Promise<KeyListRow[]>;
    /** Up to `limit` keys of a workspace after the key id `afterId`, in id (creation) order. */
    after(workspaceId: string, options: { afterId?: string; includeRevoked: boolean; limit: number }): Promise<KeyListRow[]>;
    find(workspaceId: string, keyId: string): Promise<KeyListRow | undefined>;
    /** Marks a key revoked; false when no active key has this id. */
    revoke(keyId: string, now: number): Promise<boolean>;
  };
}
