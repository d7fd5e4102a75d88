import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { ApiKey } from '../../generated/types.ts';
import { loadSpec } from '../contract/spec.ts';
import { newKeyId } from '../base/ids.ts';
import type { KeyListRow, KeyRow, KeyStore, NewKeyRow } from '../store/port.ts';
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
 * The most mailboxes one key may be restricted to: the contract's bound (CreateKeyRequest's
 * `mailboxes.maxItems`), checked again here for the keys made without a request (the demo, tests).
 * A restricted key's page merges one index scan per mailbox (each adapter's page query): its cost
 * grows with their number, so it is bounded.
 */
export const MAX_KEY_MAILBOXES: number = loadSpec().components.schemas.CreateKeyRequest.properties.mailboxes.maxItems;

/** A new key: the row to store, and the key in full, the only time it is ever visible. */
export function newKey(spec: NewKey, now: number): { row: NewKeyRow; id: string; key: string } {
  if (spec.mailboxes && new Set(spec.mailboxes).size > MAX_KEY_MAILBOXES) {
    throw new RangeError(`a key may be restricted to at most ${MAX_KEY_MAILBOXES} mailboxes (got ${new Set(spec.mailboxes).size})`);
  }
  // Monotonic ids: keys sort by creation, which list_keys pages by.
  const id = newKeyId();
  const idPart = id.slice('key_'.length);
  const secret = randomBytes(32).toString('base64url');
  const row: NewKeyRow = {
    id,
    workspace_id: spec.workspaceId,
    secret_sha256: sha256(secret).toString('hex'),
    permissions: spec.permissions,
    mailboxes: spec.mailboxes,
    label: spec.label ?? null,
    created_at: now,
  };
  return { row, id, key: `efk_${idPart}_${secret}` };
}

/** Creates and stores a key; returns it in full: the only time it is ever visible. */
export async function createKey(store: KeyStore, spec: NewKey, now: number): Promise<{ id: string; key: string }> {
  const { row, id, key } = newKey(spec, now);
  await store.keys.insert(row);
  return { id, key };
}

/**
 * The principal behind a bearer token, or undefined for a malformed, unknown or revoked key.
 * `keys`: the service's verified keys (VerifiedKeys), which may answer without a lookup;
 * without them (a tool, the CLI) every key is looked up.
 */
export async function authenticate(store: KeyStore, token: string, keys?: VerifiedKeys): Promise<Principal | undefined> {
  const match = KEY_PATTERN.exec(token);
  if (!match) return undefined;
  const id = `key_${match[1]}`;
  const secretSha256 = sha256(match[2]!);
  const kept = keys?.lookup(id);
  if (kept) return timingSafeEqual(secretSha256, kept.secretSha256) ? kept.principal : undefined;
  const mark = keys?.mark();
  const row = await store.keys.byId(id);
  if (!row || row.revoked_at !== null) return undefined;
  const stored = Buffer.from(row.secret_sha256, 'hex');
  // Hashes have a fixed length, so the comparison time says nothing about the secret.
  if (!timingSafeEqual(secretSha256, stored)) return undefined;
  const principal = principalOfRow(row);
  keys?.keep(id, principal, stored, mark);
  return principal;
}

/**
 * The principal of a key named by its id alone, or undefined when it is unknown or revoked: for a
 * credential that was issued from a key whose secret was checked then (an OAuth grant,
 * principalOfAccessToken). It goes through the same verified keys as `authenticate`, so a revoked
 * key is refused here exactly when its secret would be refused there, on every instance.
 */
export async function principalOfKey(store: KeyStore, keyId: string, keys?: VerifiedKeys): Promise<Principal | undefined> {
  const kept = keys?.lookup(keyId);
  if (kept) return kept.principal;
  const mark = keys?.mark();
  const row = await store.keys.byId(keyId);
  if (!row || row.revoked_at !== null) return undefined;
  const principal = principalOfRow(row);
  keys?.keep(keyId, principal, Buffer.from(row.secret_sha256, 'hex'), mark);
  return principal;
}

function principalOfRow(row: KeyRow): Principal {
  return {
    keyId: row.id,
    workspaceId: row.workspace_id,
    permissions: new Set(row.permissions),
    mailboxes: row.mailboxes,
  };
}

/** Every key of a workspace, oldest first (the CLI's list: an operator's workspace, read whole). */
export async function listKeys(store: KeyStore, workspaceId: string): Promise<ApiKey[]> {
  return (await store.keys.list(workspaceId)).map(keyView);
}

/** A stored key as the contract shows it (never its secret's hash). */
export function keyView(row: KeyListRow): ApiKey {
  return {
    id: row.id,
    workspace_id: row.workspace_id,
    permissions: [...row.permissions],
    mailboxes: row.mailboxes === null ? null : [...row.mailboxes],
    label: row.label,
    created_at: new Date(Number(row.created_at)).toISOString(),
    revoked_at: row.revoked_at === null ? null : new Date(Number(row.revoked_at)).toISOString(),
  };
}

/**
 * Revokes a key; false when no active key has this id. `keys`: the verified keys of the service
 * revoking it, which forget it at once (other processes hear of it: revokeKeyEverywhere).
 */
export async function revokeKey(store: KeyStore, keyId: string, now: number, keys?: VerifiedKeys): Promise<boolean> {
  // Forgotten before and after: a lookup overlapping the update is not kept either.
  keys?.forget(keyId);
  const revoked = await store.keys.revoke(keyId, now);
  keys?.forget(keyId);
  return revoked;
}
