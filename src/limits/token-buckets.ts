/** What a client is told of its bucket (RateLimit-* headers). */
export interface RateState {
  /** Bucket size: the most tokens a client may spend at once. */
  limit: number;
  /** Whole tokens left, 0 when the bucket is empty or in debt. */
  remaining: number;
  /** Seconds until the bucket is full again. */
  resetSeconds: number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/** Below this many buckets no sweep runs: a few thousand entries cost less than looking at them. */
const SWEEP_FLOOR = 4096;

/**
 * Token buckets by name (an API key, a client address), in this process's memory: `perSecond`
 * tokens flow in, up to `burst`. A bucket may go below zero (`charge`, or `spend` of more than it
 * holds): its client then waits until it is back above one token, so a costly request is paid for
 * by the requests after it.
 *
 * Memory stays bounded whatever the number of names: a full bucket carries no information and is
 * dropped by a sweep that runs each time the map has doubled since the last one (amortized O(1)
 * per call); at `maxBuckets` the quarter used least recently is dropped, which at worst gives
 * those clients a full bucket again. Buckets are kept in least-recently-used order for that.
 */
export class TokenBuckets {
  readonly #buckets = new Map<string, Bucket>();
  #sweepAt = SWEEP_FLOOR;

  constructor(
    readonly perSecond: number,
    readonly burst: number,
    readonly nowMs: () => number,
    readonly maxBuckets: number,
  ) {}

  /** How many buckets are held (the memory bound's test reads it). */
  get size(): number {
    return this.#buckets.size;
  }

  /**
   * Spends `cost` tokens when the bucket holds at least one; returns undefined (nothing spent)
   * when it does not. A cost above what is left puts the bucket in debt.
   */
  spend(name: string, cost: number): RateState | undefined {
    const bucket = this.#refilled(name);
    if (bucket.tokens < 1) return undefined;
    bucket.tokens -= cost;
    return this.#state(bucket);
  }

  /** Takes `tokens` whatever is left (the bucket may go below zero), or gives them back when negative. */
  charge(name: string, tokens: number): RateState {
    const bucket = this.#refilled(name);
    bucket.tokens = Math.min(this.burst, bucket.tokens - tokens);
    return this.#state(bucket);
  }

  /** Seconds until the bucket holds one whole token again (at least 1). */
  retryAfterSeconds(name: string): number {
    const tokens = this.#refilled(name).tokens;
    return Math.max(1, Math.ceil((1 - tokens) / this.perSecond));
  }

  state(name: string): RateState {
    return this.#state(this.#refilled(name));
  }

  #refilled(name: string): Bucket {
    const now = this.nowMs();
    let bucket = this.#buckets.get(name);
    if (bucket) {
      bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.updatedMs) / 1000) * this.perSecond);
      bucket.updatedMs = now;
      // Moved to the end: the map's order is least recently used first.
      this.#buckets.delete(name);
    } else {
      bucket = { tokens: this.burst, updatedMs: now };
      this.#makeRoom(now);
    }
    this.#buckets.set(name, bucket);
    return bucket;
  }

  #makeRoom(now: number): void {
    if (this.#buckets.size >= this.#sweepAt) {
      for (const [name, bucket] of this.#buckets) {
        if (bucket.tokens + ((now - bucket.updatedMs) / 1000) * this.perSecond >= this.burst) this.#buckets.delete(name);
      }
      this.#sweepAt = Math.max(SWEEP_FLOOR, this.#buckets.size * 2);
    }
    if (this.#buckets.size < this.maxBuckets) return;
    // The least recently used quarter goes at once: evicting one at a time from the front of a
    // Map walks over the entries deleted before it, which made each eviction cost O(n).
    let toDrop = Math.ceil(this.maxBuckets / 4);
    for (const name of this.#buckets.keys()) {
      this.#buckets.delete(name);
      if (--toDrop === 0) break;
    }
  }

  #state(bucket: Bucket): RateState {
    return {
      limit: this.burst,
      remaining: Math.max(0, Math.floor(bucket.tokens)),
      resetSeconds: Math.max(0, Math.ceil((this.burst - bucket.tokens) / this.perSecond)),
    };
  }
}
