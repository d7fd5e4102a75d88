import { RateLimitedError, type LimitReason } from '../base/errors.ts';
import { KnownTokens } from './known-tokens.ts';
import { PAGE_MAX_BYTES } from './page-bytes.ts';
import { TokenBuckets, type RateState } from './token-buckets.ts';

export type { RateState };

/** Who pays for a request: its key, and the workspace the key belongs to (whose share bounds all its keys together). */
export interface Payer {
  keyId: string;
  workspaceId: string;
}

export interface RateLimitOptions {
  /** Bucket per workspace, shared by all its keys; defaults to WORKSPACE_SHARE times the key's rate and burst. */
  workspacePerSecond?: number;
  workspaceBurst?: number;
  /** Bucket per client address, for requests no key pays for; defaults to a fifth of the key rate. */
  addressPerSecond?: number;
  addressBurst?: number;
  /** A response costs one more token per this many bytes past the first this many. */
  bytesPerToken?: number;
  /** Most buckets held per kind (keys, addresses); see TokenBuckets. */
  maxBuckets?: number;
}

export const DEFAULT_BYTES_PER_TOKEN = 64 * 1024;
/** A workspace's rate by default: this many keys' worth, whatever the number of keys it creates. */
export const WORKSPACE_SHARE = 4;
export const DEFAULT_MAX_BUCKETS = 50_000;

/**
 * What a client pays for the work it causes, in this process's memory (N instances behind a
 * balancer allow up to N times the rates).
 *
 * - By API key and by workspace (`take`, `charge`, given a Payer): every request takes one token
 *   from its key's bucket and one from its workspace's before its body is read (a workspace's
 *   bucket is shared by all its keys, so keys it creates do not multiply what it may cost), and a response pays for its size after the fact (`chargeForBytes`), so a key pulling
 *   big pages is held to a byte rate while small requests see no change. A request whose answer
 *   may be a whole page first reserves what the largest page costs (`reservePage`), settled at
 *   the answer's size: otherwise a key with a full bucket could have its whole burst of big pages
 *   in flight at once, and pay only afterwards.
 * - By client address (`takeForAddress`): what no key pays for, i.e. requests that fail
 *   authentication (each costs a hash, maybe a database lookup) and unauthenticated pages. A
 *   token is taken before a key is looked up and given back when the key proves valid.
 *
 * A rate of 0 switches both off. (Hand-written: the usual libraries count fixed windows, not a
 * token bucket that can go into debt.)
 */
export class RateLimiter {
  readonly keys: TokenBuckets;
  readonly workspaces: TokenBuckets;
  readonly addresses: TokenBuckets;
  readonly bytesPerToken: number;
  /** Bearer tokens that authenticated lately: they skip the address's bucket (remembered by Call once authenticated). */
  readonly knownTokens = new KnownTokens();

  constructor(
    readonly perSecond: number,
    readonly burst: number,
    readonly nowMs: () => number = () => performance.timeOrigin + performance.now(),
    options: RateLimitOptions = {},
  ) {
    const maxBuckets = options.maxBuckets ?? DEFAULT_MAX_BUCKETS;
    const addressPerSecond = options.addressPerSecond ?? perSecond / 5;
    this.keys = new TokenBuckets(perSecond, burst, nowMs, maxBuckets);
    this.workspaces = new TokenBuckets(
      options.workspacePerSecond ?? perSecond * WORKSPACE_SHARE,
      options.workspaceBurst ?? burst * WORKSPACE_SHARE,
      nowMs,
      maxBuckets,
    );
    this.addresses = new TokenBuckets(
      addressPerSecond,
      options.addressBurst ?? Math.max(1, Math.ceil(addressPerSecond * 2)),
      nowMs,
      maxBuckets,
    );
    this.bytesPerToken = options.bytesPerToken ?? DEFAULT_BYTES_PER_TOKEN;
  }

  get enabled(): boolean {
    return this.perSecond > 0;
  }

  /**
   * Takes `cost` tokens (default 1) from the key's bucket and its workspace's; throws rate_limited
   * (429, with Retry-After and RateLimit-* headers) when either holds less than one (then nothing
   * is taken). A cost above what is left puts the buckets in debt: the next requests wait.
   * The headers' state is the key's, or the workspace's when that one refused.
   */
  take(payer: Payer, cost = 1): RateState | undefined {
    if (!this.enabled) return undefined;
    if (!this.canPay(payer)) return this.#refuseEither(payer);
    this.workspaces.charge(payer.workspaceId, cost);
    return this.keys.charge(payer.keyId, cost);
  }

  /** Whether both buckets hold a token now (nothing is taken). */
  canPay(payer: Payer): boolean {
    return !this.enabled || (this.keys.state(payer.keyId).remaining >= 1 && this.workspaces.state(payer.workspaceId).remaining >= 1);
  }

  /** Seconds until both buckets hold a token again (at least 1). */
  retryAfterSeconds(payer: Payer): number {
    return Math.max(this.keys.retryAfterSeconds(payer.keyId), this.workspaces.retryAfterSeconds(payer.workspaceId));
  }

  /** Charges the key and its workspace after the fact (may take the buckets below zero), or gives back when negative; never throws. */
  charge(payer: Payer, tokens: number): RateState | undefined {
    if (!this.enabled) return undefined;
    this.workspaces.charge(payer.workspaceId, tokens);
    return this.keys.charge(payer.keyId, tokens);
  }

  /**
   * Charges a response of `bytes` to the key: one token per `bytesPerToken` past the first
   * (tokensForBytes), less what was `reserved` for it (reservePage).
   */
  chargeForBytes(payer: Payer, bytes: number, reserved = 0): RateState | undefined {
    return this.charge(payer, this.tokensForBytes(bytes) - reserved);
  }

  /**
   * Once a request whose answer may be a whole page (PAGE_MAX_BYTES) has taken its token: charges
   * what such a page costs past that token, and returns that reservation, to be settled by
   * chargeForBytes(payer, bytes, reserved), or given back with charge(payer, -reserved) if the
   * request fails. The key's next requests are refused while the reservations in flight leave
   * less than one token: with the defaults about a dozen such requests in flight at once (burst
   * ÷ 16). One after the other, they cost exactly what they answer.
   */
  reservePage(payer: Payer): number {
    if (!this.enabled) return 0;
    const reserved = this.tokensForBytes(PAGE_MAX_BYTES);
    this.charge(payer, reserved);
    return reserved;
  }

  /** The tokens a response of `bytes` costs beyond the one its request took: one per started `bytesPerToken` past the first. */
  tokensForBytes(bytes: number): number {
    return Math.ceil(Math.max(0, bytes - this.bytesPerToken) / this.bytesPerToken);
  }

  /** Takes `cost` tokens from the address's bucket; throws rate_limited when it holds less than one. */
  takeForAddress(address: string, cost = 1): RateState | undefined {
    if (!this.enabled) return undefined;
    return (
      this.addresses.spend(address, cost) ??
      this.#refuse(this.addresses, address, 'address', 'too many unauthenticated requests from this address')
    );
  }

  /** Gives tokens back to an address (a request it was charged for proved to be paid by a key), or charges it more. */
  chargeAddress(address: string, tokens: number): void {
    if (this.enabled) this.addresses.charge(address, tokens);
  }

  #refuseEither(payer: Payer): never {
    if (this.keys.state(payer.keyId).remaining < 1) this.#refuse(this.keys, payer.keyId, 'key', 'too many requests for this key');
    this.#refuse(this.workspaces, payer.workspaceId, 'workspace', "too many requests for this key's workspace (its keys share one budget)");
  }

  #refuse(buckets: TokenBuckets, name: string, reason: LimitReason, why: string): never {
    const retryAfter = buckets.retryAfterSeconds(name);
    throw new RateLimitedError(reason, `${why}; retry in ${retryAfter} s`, {
      'Retry-After': String(retryAfter),
      ...rateLimitHeaders(buckets.state(name)),
    });
  }
}

/** The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers). */
export function rateLimitHeaders(state: RateState): Record<string, string> {
  return {
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  };
}
