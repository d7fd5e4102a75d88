import { MIN_RETENTION_DAYS } from '../config.ts';
import { invalidArgument } from '../errors.ts';
import type { StoredPage } from '../store/port.ts';
import type { FeedScope } from './scope.ts';
import type { FeedWatermarks } from './storage.ts';

/**
 * Refuses a cursor some of whose following events (those in `scope`) were pruned:
 * never serve a page with a silent hole. Call it after reading: watermarks only rise, so if none
 * passes the cursor now, none had when the page was read. (Or with the watermark the page itself
 * brought, read in its own snapshot: restricted pages on Postgres, store/postgres/page.ts.)
 *
 * An unrestricted page that holds the event right after the cursor proves it whole without a
 * query: pruning deletes a prefix of the feed and raises the watermark in the same transaction,
 * and the page was read in one snapshot, so if seq afterSeq + 1 was still there, nothing after the
 * cursor was gone. Its seqs are distinct and above afterSeq, so the last one being afterSeq + count
 * means they are exactly afterSeq + 1 … afterSeq + count. (A restricted key's seqs are not
 * consecutive, and an empty page proves nothing: those ask the watermark.)
 *
 * A page read ahead of its request (store/common/read-ahead.ts, up to 2 s before) proves only what was
 * there then, unless its events are too young for any prune: no process prunes an event younger
 * than MIN_RETENTION_DAYS (config.ts refuses less), so one stored after `nowMs` minus that, less a
 * day for clocks that disagree, is still there. An older page read ahead asks the watermark.
 */
export async function assertCursorNotExpired(
  watermarks: FeedWatermarks,
  workspaceId: string,
  scope: FeedScope,
  afterSeq: number,
  page?: Pick<StoredPage, 'count' | 'lastSeq' | 'prunedThrough' | 'prefetched' | 'oldestStoredAtMs'>,
  nowMs: number = Date.now(),
): Promise<void> {
  const current = page !== undefined && (!page.prefetched || (page.oldestStoredAtMs ?? -Infinity) > nowMs - PRUNE_FREE_AGE_MS);
  if (current && page.count > 0 && scope.readRightAfter(afterSeq, page)) return;
  // A restricted page read on Postgres brought its mailboxes' watermark, from its own snapshot.
  const pruned =
    (current ? page.prunedThrough : undefined) ??
    (scope.mailboxes === null ? await watermarks.prunedThrough(workspaceId) : await watermarks.prunedThroughMailboxes(workspaceId, scope.mailboxes));
  if (pruned > afterSeq) {
    throw invalidArgument('after has expired: events after this cursor are past the retention period and were deleted; restart without "after" to read from the oldest retained event');
  }
}

/** Events younger than this are out of every prune's reach (MIN_RETENTION_DAYS, less a day of clock skew). */
const PRUNE_FREE_AGE_MS = (MIN_RETENTION_DAYS - 1) * 24 * 3600 * 1000;
