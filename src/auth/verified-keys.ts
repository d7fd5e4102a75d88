import type { Principal } from './principal.ts';

/** Without a channel, how long a verified key is kept: the longest a revocation elsewhere may go unseen. */
export const VERIFIED_KEY_TTL_MS = 1000;
/** With the channel up, how long a key is kept at most (revocations are heard at once: this only refreshes). */
export const HEARD_KEY_TTL_MS = 60_000;
const KEYS_KEPT = 10_000;

interface Kept {
  principal: Principal;
  secretSha256: Buffer;
  keptAt: number;
  /** The channel's epoch when the lookup began; undefined when the channel was down. */
  epoch: number | undefined;
}

/**
 * Keys verified against one database, kept so a request does not pay a round trip (Postgres) or a
 * read (SQLite, while no other process writes to the file: auth/api-keys.ts) for its key. Only
 * keys found valid are kept (an unknown or revoked key is looked up every time, so a new key works
 * at once); the secret is still checked against the stored hash on every request.
 *
 * A revocation must still take effect: one made through this process forgets the key at once;
 * one made elsewhere (another instance, the CLI, an operator's SQL) is announced by a trigger on
 * api_keys (migration 005) on the channel store/head-listener.ts listens to, and forgotten when
 * heard. While that channel is up a key is kept up to HEARD_KEY_TTL_MS; without it (not yet open,
 * lost, or no listener) VERIFIED_KEY_TTL_MS, the longest a revocation elsewhere then goes unseen.
 * A lookup that overlapped a revocation, or a change of the channel, is not kept long: its row
 * may predate the revocation whose notification was already handled.
 */
export class VerifiedKeys {
  #kept = new Map<string, Kept>();
  #live = false;
  #epoch = 0;
  #forgets = 0;
  #othersVersion: string | undefined;
  #awaitingHeard = new Map<string, Set<() => void>>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  get live(): boolean {
    return this.#live;
  }

  /** The principal kept for this key id, if still trusted, and the hash its secret must match. */
  lookup(keyId: string): Kept | undefined {
    const kept = this.#kept.get(keyId);
    if (!kept) return undefined;
    const heard = this.#live && kept.epoch === this.#epoch;
    if (this.now() - kept.keptAt <= (heard ? HEARD_KEY_TTL_MS : VERIFIED_KEY_TTL_MS)) return kept;
    this.#kept.delete(keyId);
    return undefined;
  }

  /** Taken before looking a key up in the database; `keep` checks it. */
  mark(): { forgets: number; epoch: number | undefined } {
    return { forgets: this.#forgets, epoch: this.#live ? this.#epoch : undefined };
  }

  /** A lookup begun at `mark` found this key valid. */
  keep(keyId: string, principal: Principal, secretSha256: Buffer, mark: { forgets: number; epoch: number | undefined }): void {
    if (mark.forgets !== this.#forgets) return;
    this.#kept.delete(keyId);
    if (this.#kept.size >= KEYS_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    const epoch = mark.epoch === this.#epoch && this.#live ? mark.epoch : undefined;
    this.#kept.set(keyId, { principal, secretSha256, keptAt: this.now(), epoch });
  }

  /**
   * SQLite: `version` changes whenever another process wrote to the file (othersWritesVersion):
   * any such write may have been a revocation, so nothing kept before it is believed.
   */
  othersWrote(version: string): void {
    if (version === this.#othersVersion) return;
    this.#othersVersion = version;
    this.#forgets++;
    this.#kept.clear();
  }

  /** The key was revoked or changed (here, or heard on the channel). */
  forget(keyId: string): void {
    this.#forgets++;
    this.#kept.delete(keyId);
  }

  /** A change of this key was heard on the channel: forgotten, and whoever awaits that announcement told. */
  heard(keyId: string): void {
    this.forget(keyId);
    const waiters = this.#awaitingHeard.get(keyId);
    this.#awaitingHeard.delete(keyId);
    for (const wake of waiters ?? []) wake();
  }

  /**
   * Resolves true once a change of this key is heard on the channel (call it before making the
   * change), false after `timeoutMs`. Every instance listens on the same channel and is sent the
   * same announcement at the same commit: hearing it here says it was sent to the others too.
   */
  untilHeard(keyId: string, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiters = this.#awaitingHeard.get(keyId) ?? new Set();
      this.#awaitingHeard.set(keyId, waiters);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        waiters.delete(wake);
        if (waiters.size === 0 && this.#awaitingHeard.get(keyId) === waiters) this.#awaitingHeard.delete(keyId);
        resolve(false);
      }, timeoutMs);
      // A wait whose key was not changed after all must not hold the process open.
      timer.unref();
      waiters.add(wake);
    });
  }

  /** The channel is up and verified: every change of a key from now on will be heard. */
  open(): void {
    this.#epoch++;
    this.#live = true;
  }

  /** The channel dropped: changes may go unheard, so no key is kept longer than VERIFIED_KEY_TTL_MS. */
  lose(): void {
    this.#epoch++;
    this.#live = false;
  }
}

const perDatabase = new WeakMap<object, VerifiedKeys>();

/** The verified keys of one database handle (a process may hold several: tests, tools). */
export function verifiedKeysOf(db: object): VerifiedKeys {
  let keys = perDatabase.get(db);
  if (!keys) perDatabase.set(db, (keys = new VerifiedKeys()));
  return keys;
}
