import { hasTrait, OPERATION_TRAITS, type OperationId, type OperationIdWith, type Operations } from '../../generated/operations.ts';
import type { ContractOperation } from '../contract/operations.ts';
import { RateLimitedError } from '../errors.ts';
import type { Wake } from '../feed/held-reads.ts';
import type { SharedReadMemory } from '../feed/shared-reads.ts';
import { PAGE_RESERVATION_BYTES } from '../limits/page-bytes.ts';
import type { AppServices } from '../app/services.ts';
import { requirePermission, type OperationContext } from '../operations/context.ts';
import { revokedKey, type Call } from './call.ts';
import { spanEvent } from '../tracing/spans.ts';

/**
 * How long a woken held read may wait for its page's memory. Many polls of one workspace wake at
 * once, and a workspace may read a few pages at a time (its share of the budget): the rest queue,
 * each read brief (its events just arrived). A client that chose to wait is better answered late
 * than refused, and a queued read holds nothing.
 */
export const WOKEN_ADMISSION_WAIT_MS = 10_000;

/** What an answer holds in memory besides its body (headers, the response's own buffers). */
export const ANSWER_OVERHEAD_BYTES = 64 * 1024;

/**
 * A call (Call) of one operation of the contract, as every edge makes it: the permission
 * checked before anything else is looked at, the request validated against the contract, the key
 * checked again once the request has arrived, and what the answer costs reserved, admitted and
 * settled through the call. Also what a held read or a stream asks of its call at each wait and
 * each read (`hold`, `beforeRead`): so an operation's waits and pages are paid and bounded the same
 * way whatever the transport, and nothing else does any accounting.
 */
export class OperationCall<Id extends OperationId> {
  readonly operationId: Id;
  readonly context: OperationContext;
  readonly call: Call;
  readonly #services: AppServices;

  /** A key without the operation's permission is refused whatever it sent (it would learn the schema): the operation checks again. */
  constructor(services: AppServices, call: Call, operation: ContractOperation & { operationId: Id }) {
    requirePermission(call.principal, operation.permission);
    this.operationId = operation.operationId;
    this.#services = services;
    this.call = call;
    this.context = { ...services, principal: call.principal };
  }

  /** The contract's `x-answers-page` (OPERATION_TRAITS): the answer may be a whole page (PAGE_MAX_BYTES), whose cost is reserved first (RateLimiter.reservePage). */
  get answersAPage(): boolean {
    return OPERATION_TRAITS[this.operationId].answersPage;
  }

  /** The contract's `x-may-be-held`: the read may wait for new events (`Prefer: wait`), admitting its page only once it reads one (`admitWhenReading`). */
  mayBeHeld(): this is OperationCall<OperationIdWith<'mayBeHeld'>> {
    return hasTrait(this.operationId, 'mayBeHeld');
  }

  /** The contract's `x-may-stream`: asked with `Accept: text/event-stream`, it answers a stream of its reads. */
  mayStream(): this is OperationCall<OperationIdWith<'mayStream'>> {
    return hasTrait(this.operationId, 'mayStream');
  }

  /** A page's worst-case cost, taken from the key's budget. */
  reservePage(): void {
    if (this.answersAPage) this.call.reservePage();
  }

  /** The request as the contract types it, or invalid_argument with the same message on every edge. */
  validate(body: unknown): Operations[Id]['request'] {
    return this.#services.requestValidator.check(this.operationId, body);
  }

  /**
   * Everything that must hold once the request has arrived, before the operation runs: the key is
   * still valid (a request may take up to REQUEST_TIMEOUT_MS to send its body), and a page's memory
   * is admitted. A woken read's memory is admitted once for all the calls that share it
   * (sharedReadMemory).
   */
  async ready(options: { admitLazily?: boolean } = {}): Promise<void> {
    await this.call.recheck();
    if (this.answersAPage && !options.admitLazily) await this.call.admit();
  }

  /**
   * For a call whose operation admits its page's memory only once it reads one (`ready` with
   * `admitLazily`: event_feed, whose reads answered "nothing new" from what this process knows,
   * most of a tailing client's, hold no page): admits it then, once.
   */
  readonly admitWhenReading = async (): Promise<void> => {
    if (!this.#admitted) await this.call.admit();
    this.#admitted = true;
  };
  #admitted = false;

  /** Pays for the answer at its size (less what was reserved), and holds only the memory it takes. */
  settle(answerBytes: number) {
    this.call.resizeMemory(answerBytes + ANSWER_OVERHEAD_BYTES);
    return this.call.settle(answerBytes);
  }

  /**
   * The wait of a held read (a long-poll, a stream's idle time), after a read that found nothing:
   * that read is paid (its token stays spent; the page reserved for it goes back unused), and while
   * nothing is read nothing is held, so a thousand waiting polls cost the memory budget nothing.
   * The wait ends early when the key is revoked (then unauthorized). Woken by a move, the next read
   * is paid before it is made (`beforeRead`), or, when the key's budget stays empty until
   * `deadlineMs`, the poll is refused rate_limited.
   */
  async hold(wait: () => Promise<Wake>, deadlineMs: number): Promise<Wake> {
    this.call.settle(0);
    this.call.letGoOfMemory();
    this.#admitted = false;
    this.call.watchRevocation();
    // Traced, the wait is two events of the request's span, not a span of its own (a poll may wait minutes).
    spanEvent('held read waiting');
    const why = await wait();
    spanEvent('held read woken', { 'event_feed.held_read.wake': why });
    if (this.call.revoked) throw revokedKey();
    // The woken read's memory is the shared read's (sharedReadMemory), not this call's.
    if (why === 'moved') await this.beforeRead(deadlineMs, false);
    return why;
  }

  /**
   * The memory of a read woken with others (SharedReads): a page's worst case admitted once for the
   * read (waiting up to WOKEN_ADMISSION_WAIT_MS, the workspace's share like any read), and a share of
   * it held by this call until its answer is written.
   */
  /**
   * The memory of a request's first read shared with identical reads begun since it arrived
   * (FeedRead.firstReadMemory): admitted once for the read, waiting as any request's admission
   * does, and a share held by this call until its answer is written.
   */
  readonly firstReadMemory: SharedReadMemory = {
    admit: () => this.call.admitShared(PAGE_RESERVATION_BYTES),
    keep: (release) => this.call.keepShare(release),
  };

  readonly sharedReadMemory: SharedReadMemory = {
    admit: () => this.call.admitShared(PAGE_RESERVATION_BYTES, WOKEN_ADMISSION_WAIT_MS),
    keep: (release) => this.call.keepShare(release),
  };

  /**
   * What every read after the request's first costs (a woken poll's, a stream's next page): the key
   * checked again, one token (waiting while the buckets are empty, until `deadlineMs`), the page's
   * worst case reserved, and its memory admitted (waiting up to WOKEN_ADMISSION_WAIT_MS).
   */
  async beforeRead(deadlineMs = Infinity, admitMemory = true): Promise<void> {
    await this.call.recheck();
    if (!(await this.call.payWhenAble(deadlineMs))) {
      if (this.call.revoked) throw revokedKey();
      if (this.call.ended) throw new RateLimitedError('key', 'the request ended', {});
      const retry = this.#services.rateLimiter.retryAfterSeconds(this.call.principal);
      throw new RateLimitedError('key', `too many reads for this key (its held reads pay for each read); retry in ${retry} s`, {
        'Retry-After': String(retry),
      });
    }
    this.reservePage();
    if (admitMemory) await this.call.admit(undefined, WOKEN_ADMISSION_WAIT_MS);
  }
}
