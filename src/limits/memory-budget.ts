import { RateLimitedError } from '../base/errors.ts';

/** Memory held for a request's answer until it is on its way; `resize` once its real size is known. */
export interface Reservation {
  resize(bytes: number): void;
  release(): void;
}

interface Waiter {
  tenant: string;
  bytes: number;
  grant(reservation: Reservation): void;
  timer: NodeJS.Timeout;
}

/**
 * Admits work in flight against a memory budget: a request that will hold a page (up to
 * PAGE_MAX_BYTES, twice while it is assembled) reserves that much before reading it and gives it
 * back once its answer is written. Past the budget, requests wait their turn (first come, first
 * served) for at most `maxWaitMs`, then are refused `rate_limited` (429, Retry-After): never more
 * pages in memory than the budget holds, whatever the number of requests. One tenant (the caller
 * passes the workspace) may hold at most `perTenantBytes` of it, so a single tenant cannot take the
 * whole budget, nor, since a page being read holds a database connection, the connection pool.
 */
export class MemoryBudget {
  #used = 0;
  readonly #byTenant = new Map<string, number>();
  readonly #waiting: Waiter[] = [];
  /** What a tenant may hold and still be let in past its share (TENANT_SLACK_BYTES). */
  readonly #slack: number;

  constructor(
    readonly totalBytes: number,
    readonly perTenantBytes: number,
    readonly maxWaitMs: number,
  ) {
    this.#slack = Math.min(TENANT_SLACK_BYTES, perTenantBytes / 16);
  }

  /** Bytes reserved now (for tests and metrics). */
  get used(): number {
    return this.#used;
  }

  /** Reserves `bytes` for `tenant`, waiting for room up to `maxWaitMs` (the budget's, unless given); rejects rate_limited after that. */
  admit(tenant: string, bytes: number, maxWaitMs: number = this.maxWaitMs): Promise<Reservation> {
    if (this.#waiting.length === 0 && this.#fits(tenant, bytes)) return Promise.resolve(this.#reserve(tenant, bytes));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        tenant,
        bytes,
        grant: resolve,
        timer: setTimeout(() => {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
          reject(busy());
        }, maxWaitMs),
      };
      this.#waiting.push(waiter);
      // Behind a key at its share only: the budget may well have room for this one.
      this.#grantWaiting();
    });
  }

  #fits(tenant: string, bytes: number): boolean {
    // A request larger than a share on its own still runs when nothing else of its tenant does.
    const tenantUsed = this.#byTenant.get(tenant) ?? 0;
    return this.#used + bytes <= this.totalBytes && (tenantUsed <= this.#slack || tenantUsed + bytes <= this.perTenantBytes);
  }

  #reserve(tenant: string, bytes: number): Reservation {
    let held = 0;
    let released = false;
    const change = (delta: number) => {
      held += delta;
      this.#used += delta;
      const tenantUsed = (this.#byTenant.get(tenant) ?? 0) + delta;
      if (tenantUsed > 0) this.#byTenant.set(tenant, tenantUsed);
      else this.#byTenant.delete(tenant);
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

  /** Grants waiting requests in arrival order; one whose tenant is at its share does not hold back the others. */
  #grantWaiting(): void {
    for (let i = 0; i < this.#waiting.length;) {
      const waiter = this.#waiting[i]!;
      if (!this.#fits(waiter.tenant, waiter.bytes)) {
        if (this.#used + waiter.bytes > this.totalBytes) return; // the budget itself is full: keep the order
        i++;
        continue;
      }
      this.#waiting.splice(i, 1);
      clearTimeout(waiter.timer);
      waiter.grant(this.#reserve(waiter.tenant, waiter.bytes));
    }
  }
}

/**
 * What a tenant may hold and still be let one more request in past its share (a share smaller
 * than a page's reservation still reads one page at a time): the small holds of answers already
 * read (a read shared by several calls keeps its page's size for a moment, SharedReads) do not
 * make its next read wait for them.
 */
const TENANT_SLACK_BYTES = 64 * 1024; // at most a sixteenth of the share

const busy = () =>
  new RateLimitedError('memory', 'the server is answering too many large requests right now; retry in 1 s', { 'Retry-After': '1' });
