import type { Permission } from '../../generated/types.ts';
import type { Principal } from '../auth/principal.ts';
import type { ChangeWatch } from '../change-watch.ts';
import type { Clock } from '../clock.ts';
import { forbidden } from '../errors.ts';
import type { CursorCodec } from '../feed/cursor.ts';
import type { StreamTokens } from '../auth/stream-tokens.ts';
import type { GroupCommit } from '../feed/group-commit.ts';
import type { HeldReads } from '../feed/held-reads.ts';
import type { FeedReader } from '../feed/reader.ts';
import type { ErasureKeys } from '../erasure/addresses.ts';
import type { Rewrites } from '../erasure/rewrites.ts';
import type { ErasureRunner } from '../erasure/runner.ts';
import type { Store } from '../store/port.ts';
import type { TargetPolicy } from '../webhooks/target-policy.ts';

/**
 * What every operation may use, built once per process (AppServices, the wiring, holds these and
 * what only the edges use: metrics, rate limits, memory, live calls). Operations count nothing: the
 * edges do, and the group commit tells an observer it is given.
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
  /** Reads held until their workspace moves (long-polls, streams): bounded per key and in all. */
  heldReads: HeldReads;
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
