import type { OperationInput, OperationOutput } from '../../generated/operations.ts';
import { ceilMs, parseInstant } from '../contract/date-time.ts';
import { assertTimeNotExpired } from '../feed/expiry.ts';
import type { OperationContext } from './context.ts';

/** feed_cursor's answer (`body`), and what a text about it says (the MCP tool's). */
export interface FeedPosition {
  body: OperationOutput<'feed_cursor'>;
  /** The time asked, in epoch milliseconds (rounded up); Infinity for `now`. */
  atMs: number;
  /** The cursor is at the head: nothing is stored at or after the time (or `now`). */
  atHead: boolean;
}

/**
 * feed_cursor: the cursor to pass as `after` to event_feed to start at the head (`now`) or at the
 * first event stored at or after a time. Cursors are positions in the workspace's feed, the same
 * for every key of it: a key restricted to mailboxes gets the workspace's position, and its
 * event_feed filters from there (scoped like the feed: the key's workspace, `read`). Times whose
 * events may have been pruned are refused like an expired cursor (assertTimeNotExpired). Reads only;
 * works whether or not the workspace is verified.
 *
 * `now` is the head as stored (the counter's last seq, which no event lies past), so event_feed
 * after it returns exactly the events emitted after this call; for an empty workspace that is the
 * position event_feed without `after` echoes (the watermark: 0, or the head once all was pruned).
 */
export async function feedCursor(
  ctx: Pick<OperationContext<'read'>, 'cursors' | 'principal' | 'store' | 'clock'>,
  input: OperationInput<'feed_cursor'>,
): Promise<FeedPosition> {
  const { workspaceId } = ctx.principal;
  // Events are stored at whole milliseconds: "at or after t" is "at or after t rounded up to one".
  const atMs = input.at === 'now' ? Infinity : ceilMs(parseInstant('at', input.at));
  const found = await ctx.store.positionAt(workspaceId, atMs);
  if (atMs !== Infinity) assertTimeNotExpired(found, atMs, ctx.clock.now().getTime());
  return { body: { cursor: ctx.cursors.encode(workspaceId, found.seq) }, atMs, atHead: found.seq >= found.head };
}
