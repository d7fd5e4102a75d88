import type { Knex } from 'knex';
import type { Permission } from '../../../generated/types.ts';
import type { KeyListRow, KeyRow, NewKeyRow } from '../port.ts';

const KEY_COLUMNS = ['id', 'workspace_id', 'permissions', 'mailboxes', 'label', 'created_at', 'revoked_at'] as const;
/** The hot statement of every request (authentication), as fixed text (RawRows); its row goes through decodedKey. */
export const SELECT_KEY = 'SELECT id, workspace_id, secret_sha256, permissions, mailboxes, revoked_at FROM api_keys WHERE id = ?';

type Db = Knex | Knex.Transaction;

/*
 * The columns' encodings stay here: `permissions` is comma-separated text (`read,write`),
 * `mailboxes` a JSON array or NULL (every mailbox). The port's rows hold lists.
 */
const KNOWN_PERMISSIONS: Readonly<Record<Permission, true>> = { read: true, write: true, admin: true };
const isPermission = (name: string): name is Permission => Object.hasOwn(KNOWN_PERMISSIONS, name);
const permissionsOf = (column: string): Permission[] => column.split(',').filter(isPermission);
const mailboxesOf = (column: string | null): string[] | null => (column ? (JSON.parse(column) as string[]) : null);

/** A key row as stored, its columns still encoded. */
type Encoded<Row> = Omit<Row, 'permissions' | 'mailboxes'> & { permissions: string; mailboxes: string | null };

/** A key row as the port gives it, from its columns. */
export const decodedKey = <Row extends KeyRow | KeyListRow>(row: Encoded<Row>): Row =>
  ({ ...row, permissions: permissionsOf(row.permissions), mailboxes: mailboxesOf(row.mailboxes) }) as unknown as Row;
const decodedOrNone = <Row extends KeyRow | KeyListRow>(row: Encoded<Row> | undefined): Row | undefined =>
  row === undefined ? undefined : decodedKey<Row>(row);

export const insertKey = async (db: Db, row: NewKeyRow): Promise<void> =>
  void (await db('api_keys').insert({
    ...row,
    permissions: row.permissions.join(','),
    mailboxes: row.mailboxes ? JSON.stringify(row.mailboxes) : null,
  }));

/** Every key of a workspace, oldest first (the CLI's list: an operator's workspace, read whole). */
export async function listKeys(db: Db, workspaceId: string): Promise<KeyListRow[]> {
  const rows: Array<Encoded<KeyListRow>> = await db('api_keys')
    .select(...KEY_COLUMNS)
    .where({ workspace_id: workspaceId })
    .orderBy('id');
  return rows.map((row) => decodedKey<KeyListRow>(row));
}

/** Up to `limit` keys of a workspace after the key id `afterId`, in id (creation) order. */
export async function keysAfter(
  db: Db,
  workspaceId: string,
  options: { afterId?: string; includeRevoked: boolean; limit: number },
): Promise<KeyListRow[]> {
  const query = db('api_keys')
    .select(...KEY_COLUMNS)
    .where({ workspace_id: workspaceId });
  if (options.afterId !== undefined) query.where('id', '>', options.afterId);
  if (!options.includeRevoked) query.whereNull('revoked_at');
  const rows: Array<Encoded<KeyListRow>> = await query.orderBy('id').limit(options.limit);
  return rows.map((row) => decodedKey<KeyListRow>(row));
}

/** One key of a workspace, revoked or not. */
export async function findKey(db: Db, workspaceId: string, keyId: string): Promise<KeyListRow | undefined> {
  const row: Encoded<KeyListRow> | undefined = await db('api_keys')
    .select(...KEY_COLUMNS)
    .where({ workspace_id: workspaceId, id: keyId })
    .first();
  return decodedOrNone<KeyListRow>(row);
}

export async function countActiveKeys(db: Db, workspaceId: string): Promise<number> {
  const row = await db('api_keys').count({ n: '*' }).where({ workspace_id: workspaceId }).whereNull('revoked_at').first();
  return Number(row?.n ?? 0);
}

/** Marks a key revoked; false when no active key has this id. */
export async function revokeKey(db: Db, keyId: string, now: number): Promise<boolean> {
  return (await db('api_keys').where({ id: keyId }).whereNull('revoked_at').update({ revoked_at: now })) > 0;
}

/** The key row a token names (Store.keys.byId), by the fixed statement SELECT_KEY on `readRows`. */
export async function keyById(
  readRows: <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>,
  keyId: string,
): Promise<KeyRow | undefined> {
  return decodedOrNone<KeyRow>((await readRows<Encoded<KeyRow>>(SELECT_KEY, [keyId]))[0]);
}
