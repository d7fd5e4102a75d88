import type { EventFeedRequest } from '../../generated/types.ts';
import { assertCursorNotExpired } from '../feed/expiry.ts';
import type { FeedPage } from '../feed/page.ts';
import { readPage, type StoredPage } from '../store/events.ts';
import { prunedThrough } from '../store/retention.ts';
import { requirePermission, type OperationContext } from './context.ts';

export const DEFAULT_LIMIT = 100;

const NOTHING: StoredPage = { bytes: Buffer.alloc(0), count: 0, lastSeq: undefined };

/**
 * event_feed: the events after a cursor, in emission order. Reads only: no row written, no event emitted.
 * Works whether or not the workspace is verified (the feed never looks at it).
 */
export async function eventFeed(ctx: Pick<OperationContext, 'db' | 'cursors' | 'principal' | 'heads' | 'recent'>, input: EventFeedRequest): Promise<FeedPage> {
  requirePermission(ctx.principal, 'read');
  const { workspaceId, mailboxes } = ctx.principal;
  const limit = input.limit ?? DEFAULT_LIMIT;
  const ticket = ctx.heads.ticket();
  // Without a cursor, start right after what retention removed: the oldest retained event.
  const afterSeq = input.after === undefined ? await prunedThrough(ctx.db, workspaceId) : ctx.cursors.decode(workspaceId, input.after);

  // Nothing new: hand back the caller's own cursor, byte for byte. A cursor at the head cannot have
  // expired either (retention never passes the head), so when this process knows the head no
  // query is needed (feed/heads.ts), counting every commit made before this request arrived.
  if (input.after !== undefined && (await ctx.heads.nothingAfterNow(workspaceId, afterSeq, ticket))) return { events: NOTHING, next_cursor: input.after };
  // Just written by this process: the page, whole, from memory (feed/recent-events.ts); a short
  // one only once the heads counted every commit made before this request, like the answer above.
  const recent = input.after !== undefined ? ctx.recent?.page(workspaceId, afterSeq, limit, mailboxes) : undefined;
  if (recent && (recent.wholeIfNothingAfter === undefined || (await ctx.heads.nothingAfterNow(workspaceId, recent.wholeIfNothingAfter, ticket)))) {
    const { page } = recent;
    return { events: page, next_cursor: page.lastSeq !== undefined ? ctx.cursors.encode(workspaceId, page.lastSeq) : input.after! };
  }

  const mark = ctx.heads.mark();
  const startedAt = ctx.heads.now();
  const page = await readPage(ctx.db, { workspaceId, afterSeq, limit, mailboxes });
  // A short unrestricted page saw the workspace's head. (A full page, possibly read ahead, did not.)
  if (mailboxes === null && page.count < limit) ctx.heads.learn(workspaceId, page.lastSeq ?? afterSeq, mark, startedAt);

  if (input.after !== undefined) await assertCursorNotExpired(ctx.db, workspaceId, mailboxes, afterSeq, page);

  // A restricted key's cursor follows the last event it was given, so it echoes even while other
  // mailboxes move on.
  const next_cursor =
    page.lastSeq !== undefined ? ctx.cursors.encode(workspaceId, page.lastSeq) : (input.after ?? ctx.cursors.encode(workspaceId, afterSeq));
  return { events: page, next_cursor };
}
