import type { OperationId, Operations } from '../../generated/operations.ts';
import type { Principal } from '../auth/principal.ts';
import type { ContractOperation } from '../contract/operations.ts';
import type { Reservation } from '../limits/memory-budget.ts';
import { PAGE_RESERVATION_BYTES } from '../limits/page-bytes.ts';
import type { RateState } from '../limits/rate-limiter.ts';
import { requirePermission, type AppServices, type OperationContext } from '../operations/context.ts';

/** The operations whose answer may be a whole page (PAGE_MAX_BYTES): they reserve its cost first (RateLimiter.reservePage). */
const ANSWERS_A_PAGE: ReadonlySet<OperationId> = new Set<OperationId>(['event_feed', 'list_events']);

/**
 * How long a woken held read may wait for its page's memory. Many polls of one workspace wake at
 * once, and a workspace may read a few pages at a time (its share of the budget): the rest queue,
 * each read brief (its events just arrived). A client that chose to wait is better answered late
 * than refused, and a queued read holds nothing.
 */
export const WOKEN_ADMISSION_WAIT_MS = 10_000;

/** What an answer holds in memory besides its body (headers, the response's own buffers). */
const ANSWER_OVERHEAD_BYTES = 64 * 1024;

/**
 * One authenticated call of an operation, as every edge (HTTP `/v1`, MCP tools) makes it: the
 * permission checked before anything else is looked at, the request validated against the
 * contract, and what the answer costs held and paid for: a page's tokens reserved
 * (RateLimiter.reservePage) and its memory admitted (limits/memory-budget.ts) before it is read,
 * then settled at its size once it is; or the tokens given back when the call fails.
 * The steps are separate because the edges take them in different orders (HTTP reserves before it
 * reads a body; MCP has its arguments already and validates them first).
 */
export class OperationCall<Id extends OperationId> {
  readonly operationId: Id;
  readonly context: OperationContext;
  readonly #services: AppServices;
  #reservedTokens = 0;
  #memory: Reservation | undefined;
  /** The answer is written or the client went away: nothing more is admitted for this call. */
  #finished = false;

  /** A key without the operation's permission is refused whatever it sent (it would learn the schema): the operation checks again. */
  constructor(services: AppServices, principal: Principal, operation: ContractOperation & { operationId: Id }) {
    requirePermission(principal, operation.permission);
    this.operationId = operation.operationId;
    this.#services = services;
    this.context = { ...services, principal };
  }

  get #keyId(): string {
    return this.context.principal.keyId;
  }

  get answersAPage(): boolean {
    return ANSWERS_A_PAGE.has(this.operationId);
  }

  /** A page's worst-case cost, taken from the key's budget (429 when it cannot pay it). */
  reservePage(): void {
    if (this.answersAPage) this.#reservedTokens = this.#services.rateLimiter.reservePage(this.#keyId);
  }

  /** The request as the contract types it, or invalid_argument with the same message on every edge. */
  validate(body: unknown): Operations[Id]['request'] {
    return this.#services.requestValidator.check(this.operationId, body);
  }

  /** A page's memory, held against the budget until `release` (once its answer is written). */
  async admitPage(maxWaitMs?: number): Promise<Reservation | undefined> {
    if (!this.answersAPage || this.#finished) return undefined;
    this.#memory = await this.#services.memory.admit(this.context.principal.workspaceId, PAGE_RESERVATION_BYTES, maxWaitMs);
    return this.#memory;
  }

  /** The answer is written (or the client went away): its memory goes back to the budget, and none is taken again. */
  release(): void {
    this.#finished = true;
    this.#letGoOfMemory();
  }

  #letGoOfMemory(): void {
    this.#memory?.release();
    this.#memory = undefined;
  }

  /**
   * Runs the wait of a held read (long-poll): while nothing is read, nothing is held for it, so a
   * thousand waiting polls cost the key's budget and the memory budget nothing; the page's tokens
   * and memory are taken again when it reads.
   */
  async whileHeld<T>(wait: () => Promise<T>): Promise<T> {
    this.refund();
    this.#letGoOfMemory();
    try {
      return await wait();
    } finally {
      this.reservePage();
      await this.admitPage(WOKEN_ADMISSION_WAIT_MS);
    }
  }

  /** Pays for the answer at its size (less what was reserved), and holds only the memory it takes: the key's rate state after it. */
  settle(answerBytes: number): RateState | undefined {
    this.#memory?.resize(answerBytes + ANSWER_OVERHEAD_BYTES);
    const rate = this.#services.rateLimiter.chargeForBytes(this.#keyId, answerBytes, this.#reservedTokens);
    this.#reservedTokens = 0;
    return rate;
  }

  /** The call failed: what was reserved and not used goes back to the key (its rate state after, if anything went back). */
  refund(): RateState | undefined {
    if (!this.#reservedTokens) return undefined;
    const rate = this.#services.rateLimiter.charge(this.#keyId, -this.#reservedTokens);
    this.#reservedTokens = 0;
    return rate;
  }
}
