import type { EventFeedRequest } from '../../generated/types.ts';
import { invalidArgument } from '../errors.ts';
import type { FeedPage } from '../feed/page.ts';
import { readPage } from '../store/events.ts';
import { prunedThrough, prunedThroughMailboxes } from '../store/retention.ts';
import { requirePermission, type OperationContext } from './context.ts';

export const DEFAULT_LIMIT = 100;

/**
 * event_feed: the events after a cursor, in emission order. Reads only: no row written, no event emitted.
 * Works whether or not the workspace is verified (the feed never looks at it).
 */
export async function eventFeed(ctx: OperationContext, input: EventFeedRequest): Promise<FeedPage> {
  requirePermission(ctx.principal, 'read');
  const { workspaceId, mailboxes } = ctx.principal;
  const limit = input.limit ?? DEFAULT_LIMIT;
  // Without a cursor, start right after what retention removed: the oldest retained event.
  const afterSeq = input.after === undefined ? await prunedThrough(ctx.db, workspaceId) : ctx.cursors.decode(workspaceId, input.after);

  const rows = await readPage(ctx.db, { workspaceId, afterSeq, limit, mailboxes });

  // Checked after the read: watermarks only rise, so if none passes the cursor now, none had when
  // the page was read, and the page skipped nothing. Never serve a page with a silent hole.
  if (input.after !== undefined) {
    const pruned = mailboxes === null ? await prunedThrough(ctx.db, workspaceId) : await prunedThroughMailboxes(ctx.db, workspaceId, mailboxes);
    if (pruned > afterSeq) {
      throw invalidArgument('after has expired: events after this cursor are past the retention period and were deleted; restart without "after" to read from the oldest retained event');
    }
  }

  const last = rows.at(-1);
  // Nothing new: hand back the caller's own cursor, byte for byte. A restricted key's cursor
  // follows the last event it was given, so it echoes even while other mailboxes move on.
  const next_cursor = last
    ? ctx.cursors.encode(workspaceId, last.seq)
    : (input.after ?? ctx.cursors.encode(workspaceId, afterSeq));
  return { events: rows.map((row) => row.envelope), next_cursor };
}
