import { invalidArgument } from '../errors.ts';
import type { Db } from '../store/db.ts';
import type { StoredPage } from '../store/feed-page.ts';
import { prunedThrough, prunedThroughMailboxes } from '../store/retention.ts';

/**
 * Refuses a cursor some of whose following events (those visible with `mailboxes`) were pruned:
 * never serve a page with a silent hole. Call it after reading: watermarks only rise, so if none
 * passes the cursor now, none had when the page was read. (Or with the watermark the page itself
 * brought, read in its own snapshot: restricted pages on Postgres, store/events.ts.)
 *
 * An unrestricted page that holds the event right after the cursor proves it whole without a
 * query: pruning deletes a prefix of the feed and raises the watermark in the same transaction,
 * and the page was read in one snapshot, so if seq afterSeq + 1 was still there, nothing after the
 * cursor was gone. Its seqs are distinct and above afterSeq, so the last one being afterSeq + count
 * means they are exactly afterSeq + 1 … afterSeq + count. (A restricted key's seqs are not
 * consecutive, an empty page proves nothing, and a page read ahead of its request proves only what
 * was there then: those ask the watermark.)
 */
export async function assertCursorNotExpired(
  db: Db,
  workspaceId: string,
  mailboxes: readonly string[] | null,
  afterSeq: number,
  page?: Pick<StoredPage, 'count' | 'lastSeq' | 'prunedThrough' | 'prefetched'>,
): Promise<void> {
  if (mailboxes === null && page !== undefined && !page.prefetched && page.count > 0 && page.lastSeq === afterSeq + page.count) return;
  // A restricted page read on Postgres brought its mailboxes' watermark, from its own snapshot.
  const pruned =
    (page?.prefetched ? undefined : page?.prunedThrough) ?? (mailboxes === null ? await prunedThrough(db, workspaceId) : await prunedThroughMailboxes(db, workspaceId, mailboxes));
  if (pruned > afterSeq) {
    throw invalidArgument('after has expired: events after this cursor are past the retention period and were deleted; restart without "after" to read from the oldest retained event');
  }
}
