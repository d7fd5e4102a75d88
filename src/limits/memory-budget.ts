import { ApiError } from '../errors.ts';

/** Memory held for a request's answer until it is on its way; `resize` once its real size is known. */
export interface Reservation {
  resize(bytes: number): void;
  release(): void;
}

interface Waiter {
  key: string;
  bytes: number;
  grant(reservation: Reservation): void;
  timer: NodeJS.Timeout;
}

/**
 * Admits work in flight against a memory budget: a request that will hold a page (up to
 * PAGE_MAX_BYTES, twice while it is assembled) reserves that much before reading it and gives it
 * back once its answer is written. Past the budget, requests wait their turn (first come, first
 * served) for at most `maxWaitMs`, then are refused `rate_limited` (429, Retry-After): never more
 * pages in memory than the budget holds, whatever the number of requests. One key may hold at most
 * `perKeyBytes` of it, so a single tenant cannot take the whole budget and make everyone else wait.
 */
export class MemoryBudget {
  #used = 0;
  readonly #byKey = new Map<string, number>();
  readonly #waiting: Waiter[] = [];

  constructor(
    readonly totalBytes: number,
    readonly perKeyBytes: number,
    readonly maxWaitMs: number,
  ) {}

  /** Bytes reserved now (for tests and metrics). */
  get used(): number {
    return this.#used;
  }

  /** Reserves `bytes` for `key`, waiting for room up to maxWaitMs; rejects rate_limited after that. */
  admit(key: string, bytes: number): Promise<Reservation> {
    if (this.#waiting.length === 0 && this.#fits(key, bytes)) return Promise.resolve(this.#reserve(key, bytes));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        key,
        bytes,
        grant: resolve,
        timer: setTimeout(() => {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
          reject(busy());
        }, this.maxWaitMs),
      };
      this.#waiting.push(waiter);
      // Behind a key at its share only: the budget may well have room for this one.
      this.#grantWaiting();
    });
  }

  #fits(key: string, bytes: number): boolean {
    // A request larger than a share on its own still runs when nothing else of its key does.
    const keyUsed = this.#byKey.get(key) ?? 0;
    return this.#used + bytes <= this.totalBytes && (keyUsed === 0 || keyUsed + bytes <= this.perKeyBytes);
  }

  #reserve(key: string, bytes: number): Reservation {
    let held = 0;
    let released = false;
    const change = (delta: number) => {
      held += delta;
      this.#used += delta;
      const keyUsed = (this.#byKey.get(key) ?? 0) + delta;
      if (keyUsed > 0) this.#byKey.set(key, keyUsed);
      else this.#byKey.delete(key);
    };
    change(bytes);
    return {
      resize: (to: number) => {
        if (released || to >= held) return; // only ever shrinks: the worst case was granted
        change(to - held);
        this.#grantWaiting();
      },
      release: () => {
        if (released) return;
        released = true;
        change(-held);
        this.#grantWaiting();
      },
    };
  }

  /** Grants waiting requests in arrival order; one whose key is at its share does not hold back the others. */
  #grantWaiting(): void {
    for (let i = 0; i < this.#waiting.length; ) {
      const waiter = this.#waiting[i]!;
      if (!this.#fits(waiter.key, waiter.bytes)) {
        if (this.#used + waiter.bytes > this.totalBytes) return; // the budget itself is full: keep the order
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      clearTimeout(waiter.timer);
      waiter.grant(this.#reserve(waiter.key, waiter.bytes));
    }
  }
}

const busy = () =>
  new ApiError('rate_limited', 'the server is answering too many large requests right now; retry in 1 s', 429, { 'Retry-After': '1' });
