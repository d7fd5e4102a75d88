import type { Principal, Permission } from '../auth/principal.ts';
import type { ChangeWatch } from '../change-watch.ts';
import type { Clock } from '../clock.ts';
import type { RequestValidator } from '../contract/request-validator.ts';
import { forbidden } from '../errors.ts';
import type { CursorCodec } from '../feed/cursor.ts';
import type { StreamTokens } from '../auth/stream-tokens.ts';
import type { GroupCommit } from '../feed/group-commit.ts';
import type { HeldReads } from '../feed/held-reads.ts';
import type { LiveCalls } from '../edge/live-calls.ts';
import type { FeedReader } from '../feed/reader.ts';
import type { MemoryBudget } from '../limits/memory-budget.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { RateLimiter } from '../limits/rate-limiter.ts';
import type { Store } from '../store/port.ts';
import type { TargetPolicy } from '../webhooks/target-policy.ts';

/** What every operation may use; built once per process. */
export interface Services {
  store: Store;
  cursors: CursorCodec;
  /** Signs and checks the stream tokens of GET /v1/event_feed/stream (a browser's EventSource). */
  streamTokens: StreamTokens;
  clock: Clock;
  /** What this process hears of the database's changes: the feeds' heads and the verified keys it keeps. */
  changes: ChangeWatch;
  /** Reads the feed, answering from the heads and the events just committed when they can tell. */
  feed: FeedReader;
  /** Reads held until their workspace moves (long-polls, streams): bounded per key and in all. */
  heldReads: HeldReads;
  /** emit_event's appends, sharing transactions under load. */
  groupCommit: GroupCommit;
  /** Where webhooks may point; secure (public https only) when absent. */
  webhookPolicy?: TargetPolicy;
  /** redeliver_webhook's quota: it queues nothing more for an endpoint with this many pending deliveries (10,000 when absent). */
  webhookRedeliverMaxPending?: number;
  /** How long a webhook request may take (test_webhook uses the deliveries' timeout; 10 s when absent). */
  webhookTimeoutMs?: number;
}

/** What the transports hold: the operations' services plus the per-key request budget and the validator they share. */
export interface AppServices extends Services {
  rateLimiter: RateLimiter;
  /** The contract's request schemas, compiled once: both transports validate with it. */
  requestValidator: RequestValidator;
  /** What answers in flight may hold: pages are admitted against it (limits/memory-budget.ts). */
  memory: MemoryBudget;
  /** Counted at the edges when METRICS_PORT is set (metrics/metrics.ts); absent: nothing is counted. */
  metrics?: Metrics;
  /** The calls that live on (held reads, streams), told at once when their key may have been revoked. */
  calls: LiveCalls;
  /** Set once the server starts shutting down: /readyz answers 503 from then on, so balancers stop sending. */
  lifecycle: { draining: boolean };
  /**
   * The origin clients reach this service at (PUBLIC_URL, or this process's own address), set by
   * the server once it listens: the OAuth issuer and MCP resource derive from it (oauth/urls.ts).
   * Absent (a service that does not listen): OAuth access tokens are refused everywhere.
   */
  publicOrigin?: string;
}

/** One call: the services plus who is calling. */
export interface OperationContext extends Services {
  principal: Principal;
}

export function requirePermission(principal: Principal, permission: Permission): void {
  if (!principal.permissions.has(permission)) {
    throw forbidden(`this key lacks the "${permission}" permission`);
  }
}

/** Managing webhooks takes `admin`, and a key restricted to mailboxes may not: endpoints see every mailbox. */
export function requireWorkspaceAdmin(principal: Principal): void {
  requirePermission(principal, 'admin');
  if (principal.mailboxes !== null) throw forbidden('a key restricted to mailboxes cannot manage webhooks');
}
