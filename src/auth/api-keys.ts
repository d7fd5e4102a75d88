import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiKey } from '../../generated/types.ts';
import { newKeyId } from '../ids.ts';
import type { Db } from '../store/db.ts';
import { readRows } from '../store/sql.ts';
import { PERMISSIONS, type Permission, type Principal } from './principal.ts';
import type { VerifiedKeys } from './verified-keys.ts';

// A key is `efk_<26-char key id>_<43-char secret>`; only the id and a hash of the secret are stored.
const KEY_PATTERN = /^efk_([0-9A-HJKMNP-TV-Z]{26})_([A-Za-z0-9_-]{43})$/;

const sha256 = (text: string) => createHash('sha256').update(text).digest();

export interface NewKey {
  workspaceId: string;
  permissions: Permission[];
  mailboxes: string[] | null;
  label?: string;
}

/** The id of a well-formed key (`efk_…`), or undefined: what lets a key be named by itself without its secret being kept. */
export function keyIdOf(token: string): string | undefined {
  const match = KEY_PATTERN.exec(token);
  return match ? `key_${match[1]}` : undefined;
}

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

/**
 * The most mailboxes one key may be restricted to. A restricted key's page merges one index scan
 * per mailbox (store/feed-page.ts): its cost grows with their number, so it is bounded here.
 */
export const MAX_KEY_MAILBOXES = 100;

/** Creates a key and returns it in full: the only time it is ever visible. */
export async function createKey(db: Db, spec: NewKey, now: number): Promise<{ id: string; key: string }> {
  if (spec.mailboxes && new Set(spec.mailboxes).size > MAX_KEY_MAILBOXES) {
    throw new RangeError(`a key may be restricted to at most ${MAX_KEY_MAILBOXES} mailboxes (got ${new Set(spec.mailboxes).size})`);
  }
  // Monotonic ids: keys sort by creation, which list_keys pages by.
  const id = newKeyId();
  const idPart = id.slice('key_'.length);
  const secret = randomBytes(32).toString('base64url');
  await db('api_keys').insert({
    id,
    workspace_id: spec.workspaceId,
    secret_sha256: sha256(secret).toString('hex'),
    permissions: spec.permissions.join(','),
    mailboxes: spec.mailboxes ? JSON.stringify(spec.mailboxes) : null,
    label: spec.label ?? null,
    created_at: now,
  });
  return { id, key: `efk_${idPart}_${secret}` };
}

interface KeyRow {
  id: string;
  workspace_id: string;
  secret_sha256: string;
  permissions: string;
  mailboxes: string | null;
  revoked_at: number | null;
}
const SELECT_KEY = 'SELECT id, workspace_id, secret_sha256, permissions, mailboxes, revoked_at FROM api_keys WHERE id = ?';

/**
 * The principal behind a bearer token, or undefined for a malformed, unknown or revoked key.
 * `keys`: the service's verified keys (auth/verified-keys.ts), which may answer without a lookup;
 * without them (a tool, the CLI) every key is looked up.
 */
export async function authenticate(db: Db, token: string, keys?: VerifiedKeys): Promise<Principal | undefined> {
  const match = KEY_PATTERN.exec(token);
  if (!match) return undefined;
  const id = `key_${match[1]}`;
  const secretSha256 = sha256(match[2]!);
  const kept = keys?.lookup(id);
  if (kept) return timingSafeEqual(secretSha256, kept.secretSha256) ? kept.principal : undefined;
  const mark = keys?.mark();
  const [row] = await readRows<KeyRow>(db, SELECT_KEY, [id]);
  if (!row || row.revoked_at !== null) return undefined;
  const stored = Buffer.from(row.secret_sha256, 'hex');
  // Hashes have a fixed length, so the comparison time says nothing about the secret.
  if (!timingSafeEqual(secretSha256, stored)) return undefined;
  const principal: Principal = {
    keyId: row.id,
    workspaceId: row.workspace_id,
    permissions: new Set(parsePermissions(row.permissions)),
    mailboxes: row.mailboxes ? (JSON.parse(row.mailboxes) as string[]) : null,
  };
  keys?.keep(id, principal, stored, mark);
  return principal;
}

const KEY_COLUMNS = ['id', 'workspace_id', 'permissions', 'mailboxes', 'label', 'created_at', 'revoked_at'] as const;

/** Every key of a workspace, oldest first (the CLI's list: an operator's workspace, read whole). */
export async function listKeys(db: Db, workspaceId: string): Promise<ApiKey[]> {
  const rows = await db('api_keys').select(...KEY_COLUMNS).where({ workspace_id: workspaceId }).orderBy('id');
  return rows.map(keyView);
}

/** Up to `limit` keys of a workspace after the key id `afterId`, in id (creation) order. */
export async function keysAfter(db: Db, workspaceId: string, options: { afterId?: string; includeRevoked: boolean; limit: number }): Promise<ApiKey[]> {
  const query = db('api_keys').select(...KEY_COLUMNS).where({ workspace_id: workspaceId });
  if (options.afterId !== undefined) query.where('id', '>', options.afterId);
  if (!options.includeRevoked) query.whereNull('revoked_at');
  return (await query.orderBy('id').limit(options.limit)).map(keyView);
}

/** One key of a workspace, revoked or not. */
export async function findKey(db: Db, workspaceId: string, keyId: string): Promise<ApiKey | undefined> {
  const row = await db('api_keys').select(...KEY_COLUMNS).where({ workspace_id: workspaceId, id: keyId }).first();
  return row ? keyView(row) : undefined;
}

export async function countActiveKeys(db: Db, workspaceId: string): Promise<number> {
  const row = await db('api_keys').count({ n: '*' }).where({ workspace_id: workspaceId }).whereNull('revoked_at').first();
  return Number(row?.n ?? 0);
}

function keyView(row: Record<string, any>): ApiKey {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    permissions: parsePermissions(row.permissions),
    mailboxes: row.mailboxes ? JSON.parse(row.mailboxes) : null,
    label: row.label,
    created_at: new Date(Number(row.created_at)).toISOString(),
    revoked_at: row.revoked_at === null ? null : new Date(Number(row.revoked_at)).toISOString(),
  };
}

/**
 * Revokes a key; false when no active key has this id. `keys`: the verified keys of the service
 * revoking it, which forget it at once (other processes hear of it: auth/revoke-everywhere.ts).
 */
export async function revokeKey(db: Db, keyId: string, now: number, keys?: VerifiedKeys): Promise<boolean> {
  // Forgotten before and after: a lookup overlapping the update is not kept either.
  keys?.forget(keyId);
  const count = await db('api_keys').where({ id: keyId }).whereNull('revoked_at').update({ revoked_at: now });
  keys?.forget(keyId);
  return count > 0;
}

function parsePermissions(text: string): Permission[] {
  return text.split(',').filter(isPermission);
}
