import type { Permission } from '../../generated/types.ts';
import type { Permitted } from '../auth/principal.ts';
import type { ChangeWatch } from '../feed/change-watch.ts';
import type { Clock } from '../base/clock.ts';
import type { CursorCodec } from '../feed/cursor.ts';
import type { StreamTokens } from '../auth/stream-tokens.ts';
import type { GroupCommit } from '../feed/group-commit.ts';
import type { ReadBudget } from '../feed/read-budget.ts';
import type { FeedReader } from '../feed/reader.ts';
import type { ErasureKeys } from '../erasure/addresses.ts';
import type { Rewrites } from '../erasure/rewrites.ts';
import type { ErasureRunner } from '../erasure/runner.ts';
import type { Store } from '../store/port.ts';
import type { TargetPolicy } from '../net/target-policy.ts';

/**
 * What every operation may use, built once per process (AppServices, the wiring, holds these and
 * what only the calls use: metrics, rate limits, memory, live calls). Operations count nothing:
 * the call does, and the group commit tells an observer it is given.
 */
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
  /** emit_event's appends, sharing transactions under load. */
  groupCommit: GroupCommit;
  /** erase_person's keys (the log's hashes, the sealed addresses), the runner that erases in the background, and who hears of its batches. */
  erasures: { keys: ErasureKeys; runner: ErasureRunner; rewrites: Rewrites };
  /** Where webhooks may point; secure (public https only) when absent. */
  webhookPolicy?: TargetPolicy;
  /** redeliver_webhook's quota: it queues nothing more for an endpoint with this many pending deliveries (10,000 when absent). */
  webhookRedeliverMaxPending?: number;
  /** How long a webhook request may take (test_webhook uses the deliveries' timeout; 10 s when absent). */
  webhookTimeoutMs?: number;
}

/**
 * One call of an operation needing `P`: the services, who is calling (proven to hold `P`: permit),
 * and what its reads may spend (the call's ReadBudget; absent in-process, where nothing is admitted).
 */
export interface OperationContext<P extends Permission = Permission> extends Services {
  principal: Permitted<P>;
  budget?: ReadBudget;
}
