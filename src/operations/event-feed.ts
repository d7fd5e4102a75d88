import type { EventFeedRequest } from '../../generated/types.ts';
import { systemClock, type Clock } from '../clock.ts';
import { assertCursorNotExpired } from '../feed/expiry.ts';
import type { FeedPage } from '../feed/page.ts';
import { isWhole, readPage, type StoredPage } from '../store/feed-page.ts';
import { prunedThrough } from '../store/retention.ts';
import { requirePermission, type OperationContext } from './context.ts';

export const DEFAULT_LIMIT = 100;

const NOTHING: StoredPage = { bytes: Buffer.alloc(0), count: 0, lastSeq: undefined, cutAtByteCap: false };

/** How the caller will show the page: `facts` adds each event's type and time (the MCP text), read with the page. */
export interface FeedView {
  facts?: boolean;
}

/**
 * event_feed: the events after a cursor, in emission order. Reads only: no row written, no event emitted.
 * Works whether or not the workspace is verified (the feed never looks at it).
 */
export async function eventFeed(
  ctx: Pick<OperationContext, 'db' | 'cursors' | 'principal' | 'changes' | 'recent'> & { clock?: Clock },
  input: EventFeedRequest,
  view: FeedView = {},
): Promise<FeedPage> {
  requirePermission(ctx.principal, 'read');
  const { workspaceId, mailboxes } = ctx.principal;
  const limit = input.limit ?? DEFAULT_LIMIT;
  const withFacts = view.facts === true;
  const { heads } = ctx.changes;
  const ticket = heads.ticket();
  if (input.after === undefined) return fromOldest(ctx, limit, withFacts);
  const afterSeq = ctx.cursors.decode(workspaceId, input.after);

  // Nothing new: hand back the caller's own cursor, byte for byte. A cursor at the head cannot have
  // expired either (retention never passes the head), so when this process knows the head no
  // query is needed (feed/heads.ts), counting every commit made before this request arrived.
  if (await heads.nothingAfterNow(workspaceId, afterSeq, ticket)) return { events: NOTHING, next_cursor: input.after };
  // Just written by this process: the page, whole, from memory (feed/recent-events.ts); a short
  // one only once the heads counted every commit made before this request, like the answer above.
  const recent = ctx.recent?.page(workspaceId, afterSeq, limit, mailboxes, withFacts);
  if (recent && (recent.wholeIfNothingAfter === undefined || (await heads.nothingAfterNow(workspaceId, recent.wholeIfNothingAfter, ticket)))) {
    const { page } = recent;
    return { events: page, next_cursor: page.lastSeq !== undefined ? ctx.cursors.encode(workspaceId, page.lastSeq) : input.after };
  }

  const mark = heads.mark();
  const startedAt = heads.now();
  const page = await readPage(ctx.db, { workspaceId, afterSeq, limit, mailboxes, withFacts });
  // Refused if retention removed events after the cursor (feed/expiry.ts); past this, an empty
  // page means nothing is after the cursor.
  // Retention prunes by the service's clock (retention-schedule.ts): the age of a page read ahead is judged by it too.
  await assertCursorNotExpired(ctx.db, workspaceId, mailboxes, afterSeq, page, (ctx.clock ?? systemClock).now().getTime());
  // A short unrestricted page, read now and holding every seq after the cursor, saw the workspace's head.
  if (mailboxes === null && !page.prefetched && !isWhole(page, limit) && (page.lastSeq ?? afterSeq) === afterSeq + page.count) {
    heads.learn(workspaceId, page.lastSeq ?? afterSeq, mark, startedAt);
  }

  // A restricted key's cursor follows the last event it was given, so it echoes even while other
  // mailboxes move on.
  return { events: page, next_cursor: page.lastSeq !== undefined ? ctx.cursors.encode(workspaceId, page.lastSeq) : input.after };
}

const FIRST_PAGE_ATTEMPTS = 3;

/**
 * Without a cursor: the page starting at the oldest retained event. Retention may prune between
 * reading its watermark and reading the page (then the page starts later, or is empty because the
 * whole range it looked at is gone): the watermark is read again and the page with it.
 */
async function fromOldest(ctx: Pick<OperationContext, 'db' | 'cursors' | 'principal' | 'changes'>, limit: number, withFacts: boolean): Promise<FeedPage> {
  const { workspaceId, mailboxes } = ctx.principal;
  const { heads } = ctx.changes;
  for (let attempt = 1; ; attempt++) {
    const mark = heads.mark();
    const startedAt = heads.now();
    const afterSeq = await prunedThrough(ctx.db, workspaceId);
    const page = await readPage(ctx.db, { workspaceId, afterSeq, limit, mailboxes, withFacts });
    const startsAtOldest =
      mailboxes !== null || page.count === 0 ? (await prunedThrough(ctx.db, workspaceId)) === afterSeq : page.lastSeq === afterSeq + page.count;
    if (startsAtOldest && mailboxes === null && !isWhole(page, limit)) heads.learn(workspaceId, page.lastSeq ?? afterSeq, mark, startedAt);
    if (startsAtOldest || attempt === FIRST_PAGE_ATTEMPTS) {
      return { events: page, next_cursor: ctx.cursors.encode(workspaceId, page.lastSeq ?? afterSeq) };
    }
  }
}
