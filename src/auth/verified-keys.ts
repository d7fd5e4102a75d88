import type { ChannelTrust } from '../changes/channel-trust.ts';
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

/** What VerifiedKeys.unchangedSince compares with: the forgets, the channel's epoch and the time when a call looked its key up. */
export interface KeysSnapshot {
  forgets: number;
  epoch: number | undefined;
  at: number;
}

/** Taken before looking a key up in the database; `keep` checks it. */
export interface KeyMark {
  forgets: number;
  /** The channel's mark (ChannelTrust); undefined when it was down. */
  epoch: number | undefined;
}

/**
 * Keys verified against one database, kept so a request does not pay a round trip (Postgres) or a
 * read (SQLite, while no other process writes to the file) for its key. Only keys found valid are
 * kept (an unknown or revoked key is looked up every time, so a new key works at once); the secret
 * is still checked against the stored hash on every request.
 *
 * A revocation must still take effect: one made through this process forgets the key at once;
 * one made elsewhere (another instance, the CLI, an operator's SQL) is announced by a trigger on
 * api_keys (migration 005) on the channel listenForChanges listens to, and forgotten when
 * heard. While that channel is up a key is kept up to HEARD_KEY_TTL_MS; without it (not yet open,
 * lost, or no listener) VERIFIED_KEY_TTL_MS, the longest a revocation elsewhere then goes unseen.
 * A lookup that overlapped a revocation, or a change of the channel, is not kept long: its row
 * may predate the revocation whose notification was already handled.
 *
 * On SQLite a lookup is an in-process read (~a tenth of a tailing poll's cost), and a revocation
 * by another process (the CLI) must take effect at once: keys are kept only while no other process
 * has written to the file since, checked on every request (which makes it a channel that is always
 * up: HEARD_KEY_TTL_MS; in this process every revocation goes through revokeKey, which forgets the
 * key); when that cannot be told (a transaction of this process is open on the writing
 * connection), the key is looked up. The `trust` (ChannelTrust, shared with the feed's
 * heads) says which of these holds.
 */
export class VerifiedKeys {
  #kept = new Map<string, Kept>();
  #forgets = 0;
  #awaitingHeard = new Map<string, Set<() => void>>();
  readonly #onForget: Array<(keyId: string) => void> = [];

  constructor(
    private readonly trust: ChannelTrust,
    private readonly now: () => number = () => performance.now(),
  ) {
    // Any write by another process may have been a revocation: nothing kept before it is believed.
    trust.whenOthersWrote(() => {
      this.#forgets++;
      this.#kept.clear();
    });
  }

  /** The principal kept for this key id, if still trusted, and the hash its secret must match. */
  lookup(keyId: string): Kept | undefined {
    const trust = this.trust.check();
    if (trust === 'unknown') return undefined;
    const kept = this.#kept.get(keyId);
    if (!kept) return undefined;
    const heard = trust === 'heard' && this.trust.unbroken(kept.epoch);
    if (this.now() - kept.keptAt <= (heard ? HEARD_KEY_TTL_MS : VERIFIED_KEY_TTL_MS)) return kept;
    this.#kept.delete(keyId);
    return undefined;
  }

  /** Taken before looking a key up in the database; undefined when nothing found may be kept now. */
  mark(): KeyMark | undefined {
    if (this.trust.check() === 'unknown') return undefined;
    return { forgets: this.#forgets, epoch: this.trust.mark() };
  }

  /** Taken before a call looks its key up: `unchangedSince` then tells whether looking again could find anything else. */
  snapshot(): KeysSnapshot | undefined {
    if (this.trust.check() === 'unknown') return undefined;
    return { forgets: this.#forgets, epoch: this.trust.mark(), at: this.now() };
  }

  /**
   * Nothing forgotten since the snapshot, the trust unbroken, and still within the time a kept key
   * is believed (HEARD_KEY_TTL_MS, or VERIFIED_KEY_TTL_MS without the channel): a key found valid
   * then would be found valid now (`lookup` would answer it kept), so a call checking again need
   * not look (Call.recheck). The same guarantees as `lookup`, without its hash and map.
   */
  unchangedSince(snapshot: KeysSnapshot | undefined): boolean {
    if (snapshot === undefined || snapshot.forgets !== this.#forgets) return false;
    const trust = this.trust.check();
    if (trust === 'unknown') return false;
    const heard = trust === 'heard' && this.trust.unbroken(snapshot.epoch);
    return this.now() - snapshot.at <= (heard ? HEARD_KEY_TTL_MS : VERIFIED_KEY_TTL_MS);
  }

  /** A lookup begun at `mark` found this key valid. */
  keep(keyId: string, principal: Principal, secretSha256: Buffer, mark: KeyMark | undefined): void {
    if (mark === undefined || mark.forgets !== this.#forgets) return;
    this.#kept.delete(keyId);
    if (this.#kept.size >= KEYS_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    const epoch = this.trust.unbroken(mark.epoch) ? mark.epoch : undefined;
    this.#kept.set(keyId, { principal, secretSha256, keptAt: this.now(), epoch });
  }

  /** Whether the channel is up: whether a revocation elsewhere will be heard (revokeKeyEverywhere). */
  get live(): boolean {
    return this.trust.live;
  }

  /** The key was revoked or changed (here, or heard on the channel). */
  forget(keyId: string): void {
    this.#forgets++;
    this.#kept.delete(keyId);
    for (const listener of this.#onForget) listener(keyId);
  }

  /** `listener` runs each time a key is forgotten (revoked here, or a change heard): the calls under way with it look again (LiveCalls). */
  whenForgotten(listener: (keyId: string) => void): void {
    this.#onForget.push(listener);
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
}
