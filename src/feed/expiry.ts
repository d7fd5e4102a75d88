import { invalidArgument } from '../base/errors.ts';
import type { StoredPage, TimePosition } from '../store/port.ts';
import type { FeedScope } from './scope.ts';
import type { FeedWatermarks } from './storage.ts';

/** The shortest retention a deployment may set: the feed promises clients 30 days of events. */
export const MIN_RETENTION_DAYS = 30;

/**
 * Refuses a cursor some of whose following events (those in `scope`) were pruned:
 * never serve a page with a silent hole. Call it after reading: watermarks only rise, so if none
 * passes the cursor now, none had when the page was read. (Or with the watermark the page itself
 * brought, read in its own snapshot: restricted pages on Postgres, readPgPage.)
 *
 * An unrestricted page that holds the event right after the cursor proves it whole without a
 * query: pruning deletes a prefix of the feed and raises the watermark in the same transaction,
 * and the page was read in one snapshot, so if seq afterSeq + 1 was still there, nothing after the
 * cursor was gone. Its seqs are distinct and above afterSeq, so the last one being afterSeq + count
 * means they are exactly afterSeq + 1 … afterSeq + count. (A restricted key's seqs are not
 * consecutive, and an empty page proves nothing: those ask the watermark.)
 *
 * A page read ahead of its request (ReadAhead, up to 2 s before) proves only what was
 * there then, unless its events are too young for any prune: no process prunes an event younger
 * than MIN_RETENTION_DAYS (loadConfig refuses less), so one stored after `nowMs` minus that, less a
 * day for clocks that disagree, is still there. An older page read ahead asks the watermark.
 * So does a page read on a replica (ReadReplicas), which shows the feed as it was
 * before the prunes the replica has not applied yet: the watermark asked is the primary's.
 */
export async function assertCursorNotExpired(
  watermarks: FeedWatermarks,
  workspaceId: string,
  scope: FeedScope,
  afterSeq: number,
  page?: Pick<StoredPage, 'count' | 'lastSeq' | 'prunedThrough' | 'prefetched' | 'oldestStoredAtMs' | 'fromReplica'>,
  nowMs: number = Date.now(),
): Promise<void> {
  const current =
    page !== undefined && (!(page.prefetched || page.fromReplica) || (page.oldestStoredAtMs ?? -Infinity) > nowMs - PRUNE_FREE_AGE_MS);
  if (current && page.count > 0 && scope.readRightAfter(afterSeq, page)) return;
  // A restricted page read on Postgres brought its mailboxes' watermark, from its own snapshot.
  const pruned =
    (current ? page.prunedThrough : undefined) ??
    (scope.mailboxes === null
      ? await watermarks.prunedThrough(workspaceId)
      : await watermarks.prunedThroughMailboxes(workspaceId, scope.mailboxes));
  if (pruned > afterSeq) {
    throw invalidArgument(
      'after has expired: events after this cursor are past the retention period and were deleted; restart without "after" to read from the oldest retained event',
    );
  }
}

/**
 * Refuses a cursor past the workspace's head. A cursor names the position of an event this service
 * delivered, and positions are never taken back (a rollback takes its increment with it; retention
 * removes the oldest): a cursor past the head means the database lost commits it had acknowledged,
 * a failover to an asynchronous replica that had not received them, or a restore from a backup.
 * Those positions will be given to other events, which this cursor would silently skip: refused,
 * like an expired cursor, so that the client starts again from what the database does hold. (Once
 * new events have taken the head past such a cursor, nothing in it tells them apart: see docs/retention.md.)
 */
export function assertCursorNotPastHead(head: number, afterSeq: number): void {
  if (afterSeq > head) {
    throw invalidArgument(
      'after is past the end of this feed: the database no longer holds the events this cursor was given after (it was restored, or failed over to a copy that had not received them); restart without "after" and skip the event ids you already processed',
    );
  }
}

/**
 * Refuses a time (feed_cursor's `at`) when events stored at or after it may have been pruned: the
 * cursor given for it would silently skip them, which is what an expired cursor is refused for.
 * `found` is the position the store found for it (Store.positionAt); stored_at never goes down
 * along the seqs, so every pruned event was stored at or before the oldest retained one and at or
 * before the newest of all.
 * - Nothing pruned (watermark 0): every event ever stored is there; any time is answered.
 * - The position is past the watermark: the event at it is retained and was stored before `atMs`,
 *   so every pruned event (at a lower seq) was too: nothing at or after `atMs` is missing.
 * - The position is the watermark and events are retained: the oldest retained one is stored at or
 *   after `atMs` (atMs ≤ its stored_at), and a pruned one may be too (the brief window between
 *   them, or the same millisecond): refused, even if none actually was (the rows are gone: nothing
 *   tells), as an expired cursor is.
 * - Everything was pruned (the head is the watermark): the newest pruned event is the head's, whose
 *   stored_at the counter keeps: refused when `atMs` is at or before it, answered (the head) after
 *   it. Where that was not kept yet (0: pruned whole before migrations 009/010), a pruned event was
 *   stored before its prune's cutoff, at least MIN_RETENTION_DAYS (less a day of clock skew) before
 *   now: a time later than that is answered, an earlier one refused.
 */
export function assertTimeNotExpired(found: TimePosition, atMs: number, nowMs: number): void {
  const { seq, head, prunedThrough, newestStoredAtMs } = found;
  if (prunedThrough === 0 || seq > prunedThrough) return;
  const prunedMayHold = head > prunedThrough || (newestStoredAtMs > 0 ? atMs <= newestStoredAtMs : atMs <= nowMs - PRUNE_FREE_AGE_MS);
  if (prunedMayHold) {
    throw invalidArgument(
      'at has expired: events stored at or after this time may be past the retention period and deleted; call event_feed without "after" to read from the oldest retained event',
    );
  }
}

/** Events younger than this are out of every prune's reach (MIN_RETENTION_DAYS, less a day of clock skew). */
const PRUNE_FREE_AGE_MS = (MIN_RETENTION_DAYS - 1) * 24 * 3600 * 1000;
