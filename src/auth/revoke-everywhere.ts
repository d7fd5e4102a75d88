import { setTimeout as sleep } from 'node:timers/promises';
import type { ChangeStore, KeyStore } from '../store/port.ts';
import { revokeKey } from './api-keys.ts';
import { VERIFIED_KEY_TTL_MS, type VerifiedKeys } from './verified-keys.ts';

/** How long to wait for this instance to hear a revocation announced before answering anyway. */
const ANNOUNCEMENT_TIMEOUT_MS = 5000;

/**
 * Revokes a key and returns once every instance of the service refuses it; false when no active
 * key has this id.
 *
 * Without a change channel (SQLite): every process checks on each request whether another one wrote to the file since it
 * verified a key (authenticate), so a revocation is refused everywhere as soon as it commits.
 * With one (Postgres): instances keep verified keys, and forget one when its change is announced on the
 * key channel (migration 005). The announcement reaches every listening instance at the same
 * commit, so once this instance hears its own, the others have theirs too. An instance whose
 * channel is down keeps a key at most VERIFIED_KEY_TTL_MS: waiting that long as well covers it.
 * A revocation is rare and an admin's act: a second of latency buys "refused everywhere when
 * the call answers".
 *
 * `keys`: the verified keys of the service revoking it (none for the CLI, which keeps none and
 * hears nothing: it waits VERIFIED_KEY_TTL_MS).
 */
export async function revokeKeyEverywhere(
  store: KeyStore & ChangeStore,
  keyId: string,
  now: number,
  keys?: VerifiedKeys,
): Promise<boolean> {
  if (!store.listenForChanges) return revokeKey(store, keyId, now, keys);
  const heard = keys?.live ? keys.untilHeard(keyId, ANNOUNCEMENT_TIMEOUT_MS) : Promise.resolve(false);
  const revoked = await revokeKey(store, keyId, now, keys);
  if (!revoked) return false;
  await Promise.all([heard, sleep(VERIFIED_KEY_TTL_MS)]);
  return true;
}
