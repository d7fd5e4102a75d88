import { setTimeout as sleep } from 'node:timers/promises';
import type { Principal } from '../auth/principal.ts';
import { ApiError, RateLimitedError, unauthorized } from '../base/errors.ts';
import { KnownTokens } from '../limits/known-tokens.ts';
import type { Reservation } from '../limits/memory-budget.ts';
import type { Wake } from '../feed/held-reads.ts';
import { PAGE_RESERVATION_BYTES } from '../limits/page-bytes.ts';
import type { RateState } from '../limits/rate-limiter.ts';
import { principalOfKey } from '../auth/api-keys.ts';
import type { KeysSnapshot } from '../auth/verified-keys.ts';
import { isAccessToken } from '../oauth/tokens.ts';
import type { ReadBudget } from '../feed/read-budget.ts';
import { spanEvent } from '../tracing/spans.ts';
import type { CallServices } from './call-services.ts';
import { bearerPrincipal, type BearerLookup } from './credentials.ts';

/** How a call ended early: its client went away or its answer is written (`ended`), or its key was revoked. */
export type CallEnd = 'ended' | 'revoked';

/**
 * How long a woken held read may wait for its page's memory. Many polls of one workspace wake at
 * once, and a workspace may read a few pages at a time (its share of the budget): the rest queue,
 * each read brief (its events just arrived). A client that chose to wait is better answered late
 * than refused, and a queued read holds nothing.
 */
export const WOKEN_ADMISSION_WAIT_MS = 10_000;

/** What an answer holds in memory besides its body (headers, the response's own buffers). */
export const ANSWER_OVERHEAD_BYTES = 64 * 1024;

/** Refused once the key is revoked while the call was under way. */
export const revokedKey = () => unauthorized('this API key was revoked');

/**
 * One call, from its bearer key to its last byte, whatever the transport (HTTP `/v1`, MCP) and the
 * answer's shape (a JSON page, a held read, an event stream, an MCP tool result): the one place
 * that knows who pays for it and what it holds.
 *
 * - Who: the key, authenticated when the call opens (paid by the client's address until it proves
 *   valid), and checked again (`recheck`) once the request's body has arrived, before the operation
 *   runs, and at each wake and page of a read that lives longer (a held poll, a stream), which also
 *   watch for the key's revocation (`watchRevocation`: LiveCalls tells them at once).
 * - What it costs: tokens from the key's and its workspace's buckets (`pay`, a page's worst case
 *   reserved first by `reservePage` and settled at its size), and the memory its answer holds
 *   (`admit`), both released on every way a call can end (`end`, idempotent): a reservation granted
 *   after the call ended is given back at once.
 *
 * The key itself is kept only to be checked again: never logged, never echoed.
 */
export class Call implements ReadBudget {
  readonly principal: Principal;
  readonly #services: CallServices;
  /** Looks the caller up again (its credential kept only for this: never logged, never echoed). */
  readonly #lookUpAgain: () => Promise<BearerLookup>;
  /** Made only when someone listens (a held read, a stream, a wait for tokens): a plain page's call never needs one. */
  #life: AbortController | undefined;
  #endedAs: CallEnd | undefined;
  #memory: Reservation | undefined;
  /** Shares of reservations held with other calls (a read shared by polls woken together: SharedReads). */
  #shares: Array<() => void> = [];
  #reservedTokens = 0;
  #unwatch: (() => void) | undefined;

  /** The verified keys as they stood when the key was looked up (API keys and stream tokens; never an OAuth token, revocable on its own). */
  readonly #lookedUpAt: KeysSnapshot | undefined;

  private constructor(services: CallServices, principal: Principal, lookUpAgain: () => Promise<BearerLookup>, lookedUpAt?: KeysSnapshot) {
    this.#services = services;
    this.principal = principal;
    this.#lookUpAgain = lookUpAgain;
    this.#lookedUpAt = lookedUpAt;
  }

  /**
   * Authenticates the bearer key (`token`: undefined when the header is missing or malformed), or
   * where `oauthResource` is given (MCP), an OAuth access token issued for it (bearerPrincipal),
   * paid as `#identified` says.
   */
  static open(services: CallServices, token: string | undefined, address: string, oauthResource?: string): Promise<Call> {
    const lookUp = (): Promise<BearerLookup> =>
      token === undefined ? Promise.resolve({}) : bearerPrincipal(services, token, oauthResource);
    return Call.#identified(services, token, address, lookUp, token === undefined || !isAccessToken(token));
  }

  /**
   * A call authenticated by a stream token (StreamTokens: GET /v1/event_feed/stream),
   * paid like a bearer key (its address pays until it proves valid). Looked up again, it is its key
   * that must still be valid: a stream opened before the token expired goes on while its key does.
   */
  static openWithStreamToken(services: CallServices, token: string, address: string): Promise<Call> {
    const refusal = 'invalid, expired or revoked stream token: mint another with stream_token';
    const claims = services.streamTokens.verify(token, services.clock.now().getTime());
    const lookUp = async (): Promise<BearerLookup> => {
      const principal = claims && (await principalOfKey(services.store, claims.keyId, services.changes.keys));
      return principal ? { principal } : { refusal };
    };
    return Call.#identified(services, token, address, lookUp, true);
  }

  /**
   * No request goes unpaid: one whose credential authenticated lately (RateLimiter.knownTokens) is
   * paid by its key; any other by its address before it is looked up (429 when the address has
   * nothing left): a token taken, given back if the credential proves valid, kept if not. So a flood
   * of unknown keys costs at most the address's rate in lookups, and a valid key sharing that
   * address is not refused for it once it has authenticated. A database failure here is ours (500),
   * not the caller's (401). The key's own token is not taken here: `pay`.
   */
  static async #identified(
    services: CallServices,
    token: string | undefined,
    address: string,
    lookUp: () => Promise<BearerLookup>,
    standsWithItsKey: boolean,
  ): Promise<Call> {
    const { rateLimiter } = services;
    // Taken before the lookup: a revocation heard while it runs makes the recheck look again.
    const lookedUpAt = standsWithItsKey ? services.changes.keys.snapshot() : undefined;
    if (!rateLimiter.enabled) {
      const found = await lookUp();
      if (!found.principal) throw unauthorized(found.refusal);
      return new Call(services, found.principal, lookUp, lookedUpAt);
    }
    const digest = token === undefined ? undefined : KnownTokens.digest(token);
    const known = digest !== undefined && rateLimiter.knownTokens.has(digest);
    if (!known) rateLimiter.takeForAddress(address);
    let found: BearerLookup;
    try {
      found = await lookUp();
    } catch (err) {
      // Our failure (the database), not the client's: its address does not pay for it.
      if (!known) rateLimiter.chargeAddress(address, -1);
      throw err;
    }
    if (!found.principal) {
      if (known) {
        // Revoked since: from now on this token is looked up only if its address can pay.
        rateLimiter.knownTokens.forget(digest);
        rateLimiter.chargeAddress(address, 1);
      }
      throw unauthorized(found.refusal);
    }
    if (!known) rateLimiter.chargeAddress(address, -1);
    rateLimiter.knownTokens.remember(digest!);
    return new Call(services, found.principal, lookUp, lookedUpAt);
  }

  /** Aborted when the call ends or its key is revoked (`reason` is the CallEnd). */
  get signal(): AbortSignal {
    if (!this.#life) {
      this.#life = new AbortController();
      if (this.#endedAs) this.#life.abort(this.#endedAs);
    }
    return this.#life.signal;
  }

  get ended(): boolean {
    return this.#endedAs !== undefined;
  }

  get revoked(): boolean {
    return this.#endedAs === 'revoked';
  }

  /** One request's token (or `cost`) from the key's and its workspace's buckets: 429 rate_limited when either is empty. */
  pay(cost = 1): RateState | undefined {
    return this.#services.rateLimiter.take(this.principal, cost);
  }

  /**
   * `pay`, waiting while the buckets are empty (a stream pauses rather than closes): false when the
   * call ended meanwhile or `deadlineMs` (performance.now()) passed first.
   */
  async payWhenAble(deadlineMs = Infinity): Promise<boolean> {
    const limiter = this.#services.rateLimiter;
    while (!limiter.canPay(this.principal)) {
      const pause = Math.min(Math.max(100, limiter.retryAfterSeconds(this.principal) * 1000), deadlineMs - performance.now());
      if (pause <= 0) return false;
      const woke = await sleep(pause, true, { signal: this.signal }).catch(() => false);
      if (!woke) return false;
    }
    if (this.ended) return false;
    this.pay();
    return true;
  }

  /** What an answer that may be a whole page costs at worst, taken now (RateLimiter.reservePage) and settled by `settle`. */
  reservePage(): void {
    this.#reservedTokens += this.#services.rateLimiter.reservePage(this.principal);
  }

  /** Pays for an answer of `bytes` (less what was reserved): the rate state after it. */
  settle(bytes: number): RateState | undefined {
    const rate = this.#services.rateLimiter.chargeForBytes(this.principal, bytes, this.#reservedTokens);
    this.#reservedTokens = 0;
    return rate;
  }

  /** The call failed: what was reserved and not used goes back (the rate state after, if anything went back). */
  refund(): RateState | undefined {
    if (!this.#reservedTokens) return undefined;
    const rate = this.#services.rateLimiter.charge(this.principal, -this.#reservedTokens);
    this.#reservedTokens = 0;
    return rate;
  }

  /**
   * Memory for an answer (a page's worst case by default), held against the budget until
   * `letGoOfMemory`, a smaller `resizeMemory`, or the call's end. Waits for room up to `maxWaitMs`
   * (the budget's own wait when absent), then 429. One reservation at a time: a call reads one page
   * at a time.
   */
  async admit(bytes = PAGE_RESERVATION_BYTES, maxWaitMs?: number): Promise<void> {
    this.letGoOfMemory();
    if (this.ended) throw this.#endedError();
    const reservation = await this.#services.memory.admit(this.principal.workspaceId, bytes, maxWaitMs);
    // Granted after the call ended (its client left while it waited): nobody will release it but here.
    if (this.ended) {
      reservation.release();
      throw this.#endedError();
    }
    this.#memory = reservation;
  }

  /** Holds only what the answer takes, once its size is known. */
  resizeMemory(bytes: number): void {
    this.#memory?.resize(bytes);
  }

  letGoOfMemory(): void {
    this.#pageAdmitted = false;
    this.#memory?.release();
    this.#memory = undefined;
    const shares = this.#shares;
    this.#shares = [];
    for (const release of shares) release();
  }

  /** Holds a share of a reservation made for several calls (ReadBudget.keepShare) until `letGoOfMemory` or the call's end. */
  keepShare(release: () => void): void {
    if (this.ended) return release();
    this.#shares.push(release);
  }

  /**
   * A page's worst case for a read the call may share with others (a woken poll's: SharedReads),
   * admitted for the read rather than for this call (waiting up to `maxWaitMs`).
   */
  admitSharedMemory(bytes: number, maxWaitMs?: number): Promise<Reservation> {
    // Not refused when this call has ended: the read is others' too, and the reservation is the
    // shared read's, released by it (SharedReads), not by this call.
    return this.#services.memory.admit(this.principal.workspaceId, bytes, maxWaitMs);
  }

  /** ReadBudget: this call's page memory, once its read has a page to read; at most once per read (`waitBetweenReads` lets go of it). */
  async admitPage(): Promise<void> {
    if (this.#pageAdmitted) return;
    await this.admit(undefined, this.#admissionWaitMs);
    this.#pageAdmitted = true;
  }
  #pageAdmitted = false;
  /** How long the next page admission may wait: a woken read's may wait longer (WOKEN_ADMISSION_WAIT_MS). */
  #admissionWaitMs: number | undefined;

  /** ReadBudget: a read shared with other calls, admitted for the read (a woken one waiting up to WOKEN_ADMISSION_WAIT_MS). */
  admitShared(woken: boolean): Promise<Reservation> {
    return this.admitSharedMemory(PAGE_RESERVATION_BYTES, woken ? WOKEN_ADMISSION_WAIT_MS : undefined);
  }

  /**
   * The wait of a held read (a long-poll, a stream's idle time), after a read that found nothing:
   * that read is paid (its token stays spent; the page reserved for it goes back unused), and while
   * nothing is read nothing is held, so a thousand waiting polls cost the memory budget nothing.
   * The wait ends early when the key is revoked (then unauthorized). Woken by a move, the next read
   * is paid before it is made (`beforeRead`; its memory is the shared read's), or, when the key's
   * budget stays empty until `deadlineMs`, refused rate_limited.
   */
  async waitBetweenReads(wait: () => Promise<Wake>, deadlineMs: number): Promise<Wake> {
    this.settle(0);
    this.letGoOfMemory();
    this.watchRevocation();
    // Traced, the wait is two events of the request's span, not a span of its own (a poll may wait minutes).
    spanEvent('held read waiting');
    const why = await wait();
    spanEvent('held read woken', { 'event_feed.held_read.wake': why });
    if (this.revoked) throw revokedKey();
    if (why === 'moved') await this.beforeRead(deadlineMs, false);
    return why;
  }

  /**
   * What every read after the request's first costs (a woken poll's, a stream's next page): the key
   * checked again, one token (waiting while the buckets are empty, until `deadlineMs`), the page's
   * worst case reserved, and its memory admitted (waiting up to WOKEN_ADMISSION_WAIT_MS) now or,
   * `admitNow` false, by the read once it has a page to read.
   */
  async beforeRead(deadlineMs = Infinity, admitNow = true): Promise<void> {
    await this.recheck();
    if (!(await this.payWhenAble(deadlineMs))) {
      if (this.revoked) throw revokedKey();
      if (this.ended) throw new RateLimitedError('key', 'the request ended', {});
      const retry = this.#services.rateLimiter.retryAfterSeconds(this.principal);
      throw new RateLimitedError('key', `too many reads for this key (its held reads pay for each read); retry in ${retry} s`, {
        'Retry-After': String(retry),
      });
    }
    this.reservePage();
    this.#admissionWaitMs = WOKEN_ADMISSION_WAIT_MS;
    if (admitNow) await this.admitPage();
  }

  /** Pays for an answer at its size (less what was reserved), and holds only the memory it takes. */
  settleAnswer(answerBytes: number): RateState | undefined {
    this.resizeMemory(answerBytes + ANSWER_OVERHEAD_BYTES);
    return this.settle(answerBytes);
  }

  /**
   * The key is looked up again (its verified copy when one is trusted: VerifiedKeys): refused
   * unauthorized once it was revoked since the call opened, and the call ends.
   */
  async recheck(): Promise<void> {
    if (this.revoked) throw revokedKey();
    // Nothing heard of any key since this one was looked up, and within the time a verified key is
    // believed: looking again would find the same (VerifiedKeys.unchangedSince).
    if (this.#services.changes.keys.unchangedSince(this.#lookedUpAt)) return;
    if (!(await this.stillValid())) {
      this.#end('revoked');
      throw revokedKey();
    }
  }

  /** Whether the key (or the OAuth or stream token standing for it) still authenticates (LiveCalls asks once per key for all its calls). */
  async stillValid(): Promise<boolean> {
    const { principal } = await this.#lookUpAgain();
    return principal?.keyId === this.principal.keyId;
  }

  /** A call that lives on (a held read, a stream) is told at once when its key may have changed (LiveCalls), until it ends. */
  watchRevocation(): void {
    if (this.#unwatch || this.ended) return;
    this.#unwatch = this.#services.calls.add(this);
  }

  /** Its key was found revoked (LiveCalls): whatever the call waits on ends now, and it is answered unauthorized. */
  revoke(): void {
    this.#end('revoked');
  }

  /** The answer is written or the client went away: everything the call holds goes back; nothing is admitted after. */
  end(): void {
    this.#end('ended');
  }

  #end(why: CallEnd): void {
    if (!this.#endedAs) {
      this.#endedAs = why;
      this.#life?.abort(why);
    }
    this.letGoOfMemory();
    this.#unwatch?.();
    this.#unwatch = undefined;
  }

  #endedError(): ApiError {
    return this.revoked ? revokedKey() : new ApiError('invalid_argument', 'the request ended before its answer', 499);
  }
}
