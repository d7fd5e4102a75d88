import { invalidArgument } from '../errors.ts';
import type { Db } from '../store/db.ts';
import { prunedThrough, prunedThroughMailboxes } from '../store/retention.ts';

/**
 * Refuses a cursor some of whose following events (those visible with `mailboxes`) were pruned:
 * never serve a page with a silent hole. Call it after reading: watermarks only rise, so if none
 * passes the cursor now, none had when the page was read.
 */
export async function assertCursorNotExpired(db: Db, workspaceId: string, mailboxes: readonly string[] | null, afterSeq: number): Promise<void> {
  const pruned = mailboxes === null ? await prunedThrough(db, workspaceId) : await prunedThroughMailboxes(db, workspaceId, mailboxes);
  if (pruned > afterSeq) {
    throw invalidArgument('after has expired: events after this cursor are past the retention period and were deleted; restart without "after" to read from the oldest retained event');
  }
}
