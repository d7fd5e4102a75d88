import type { LiveCalls } from '../auth/live-calls.ts';
import type { RequestValidator } from '../contract/request-validator.ts';
import type { HeldReads } from '../feed/held-reads.ts';
import type { MemoryBudget } from '../limits/memory-budget.ts';
import type { RateLimiter } from '../limits/rate-limiter.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { Services } from '../operations/context.ts';

/**
 * What a call needs besides the operations' services: the budgets it pays from (rate, memory),
 * the validator every transport shares, the held reads, the calls that live on, the metrics. The
 * composition root (createServices) builds them; the edges declare what they need of this.
 */
export interface CallServices extends Services {
  rateLimiter: RateLimiter;
  /** The contract's request schemas, compiled once: every transport validates with it. */
  requestValidator: RequestValidator;
  /** What answers in flight may hold: pages are admitted against it (MemoryBudget). */
  memory: MemoryBudget;
  /** Reads held until their workspace moves (long-polls, streams): bounded per key and in all. */
  heldReads: HeldReads;
  /** The calls that live on (held reads, streams), told at once when their key may have been revoked. */
  calls: LiveCalls;
  /** Counted when METRICS_PORT is set (Metrics); absent: nothing is counted. */
  metrics?: Metrics;
}
