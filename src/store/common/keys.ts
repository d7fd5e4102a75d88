import type { Knex } from 'knex';
import type { KeyListRow, NewKeyRow } from '../port.ts';

const KEY_COLUMNS = ['id', 'workspace_id', 'permissions', 'mailboxes', 'label', 'created_at', 'revoked_at'] as const;
/** The hot statement of every request (authentication), as fixed text (common/sql.ts). */
export const SELECT_KEY = 'SELECT id, workspace_id, secret_sha256, permissions, mailboxes, revoked_at FROM api_keys WHERE id = ?';

type Db = Knex | Knex.Transaction;

export const insertKey = async (db: Db, row: NewKeyRow): Promise<void> => void (await db('api_keys').insert(row));

/** Every key of a workspace, oldest first (the CLI's list: an operator's workspace, read whole). */
export async function listKeys(db: Db, workspaceId: string): Promise<KeyListRow[]> {
  const rows = await db('api_keys').select(...KEY_COLUMNS).where({ workspace_id: workspaceId }).orderBy('id');
  return rows;
}

/** Up to `limit` keys of a workspace after the key id `afterId`, in id (creation) order. */
export async function keysAfter(db: Db, workspaceId: string, options: { afterId?: string; includeRevoked: boolean; limit: number }): Promise<KeyListRow[]> {
  const query = db('api_keys').select(...KEY_COLUMNS).where({ workspace_id: workspaceId });
  if (options.afterId !== undefined) query.where('id', '>', options.afterId);
  if (!options.includeRevoked) query.whereNull('revoked_at');
  return query.orderBy('id').limit(options.limit);
}

/** One key of a workspace, revoked or not. */
export async function findKey(db: Db, workspaceId: string, keyId: string): Promise<KeyListRow | undefined> {
  const row = await db('api_keys').select(...KEY_COLUMNS).where({ workspace_id: workspaceId, id: keyId }).first();
  return row;
}

export async function countActiveKeys(db: Db, workspaceId: string): Promise<number> {
  const row = await db('api_keys').count({ n: '*' }).where({ workspace_id: workspaceId }).whereNull('revoked_at').first();
  return Number(row?.n ?? 0);
}

/** Marks a key revoked; false when no active key has this id. */
export async function revokeKey(db: Db, keyId: string, now: number): Promise<boolean> {
  return (await db('api_keys').where({ id: keyId }).whereNull('revoked_at').update({ revoked_at: now })) > 0;
}

