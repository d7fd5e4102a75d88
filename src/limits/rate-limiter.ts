import { ApiError } from '../errors.ts';

export interface RateState {
  /** Bucket size: the most requests a key may make at once. */
  limit: number;
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/**
 * A token bucket per API key, in this process's memory: `perSecond` tokens flow in, up to `burst`.
 * Each instance keeps its own buckets, so N instances behind a balancer allow up to N× the rate.
 * (Hand-written: the usual libraries count fixed windows, not a token bucket; this is 40 lines.)
 */
export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();

  constructor(
    readonly perSecond: number,
    readonly burst: number,
    readonly nowMs: () => number = () => performance.timeOrigin + performance.now(),
  ) {}

  get enabled(): boolean {
    return this.perSecond > 0;
  }

  /** Takes one token for `key`; throws rate_limited (with its headers) when the bucket is empty. */
  take(key: string): RateState | undefined {
    if (!this.enabled) return undefined;
    const now = this.nowMs();
    const bucket = this.#buckets.get(key) ?? { tokens: this.burst, updatedMs: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.updatedMs) / 1000) * this.perSecond);
    bucket.updatedMs = now;
    this.#buckets.set(key, bucket);
    if (this.#buckets.size > 10_000) this.#forgetFullBuckets(now);

    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
      const state = this.#state(bucket);
      throw new ApiError('rate_limited', `too many requests for this key; retry in ${retryAfter} s`, 429, {
        'Retry-After': String(retryAfter),
        ...rateLimitHeaders(state),
      });
    }
    bucket.tokens -= 1;
    return this.#state(bucket);
  }

  #state(bucket: Bucket): RateState {
    return { limit: this.burst, remaining: Math.floor(bucket.tokens), resetSeconds: Math.ceil((this.burst - bucket.tokens) / this.perSecond) };
  }

  // A full bucket carries no information: dropping it changes nothing for its key.
  #forgetFullBuckets(now: number) {
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + ((now - bucket.updatedMs) / 1000) * this.perSecond >= this.burst) this.#buckets.delete(key);
    }
  }
}

/** The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers). */
export function rateLimitHeaders(state: RateState): Record<string, string> {
  return { 'RateLimit-Limit': String(state.limit), 'RateLimit-Remaining': String(state.remaining), 'RateLimit-Reset': String(state.resetSeconds) };
}
