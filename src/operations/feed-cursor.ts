import type { OperationInput, OperationOutput } from '../../generated/operations.ts';
import { ceilMs, parseInstant } from '../contract/date-time.ts';
import { assertTimeNotExpired } from '../feed/expiry.ts';
import type { TimePosition } from '../store/port.ts';
import type { OperationContext } from './context.ts';

/** feed_cursor's answer (`body`), and what a text about it says (the MCP tool's). */
export interface FeedPosition {
  body: OperationOutput<'feed_cursor'>;
  /** The time asked, in epoch milliseconds (rounded up); Infinity for `now`. */
  atMs: number;
  /** The cursor is at the head: nothing is stored at or after the time (or `now`). */
  atHead: boolean;
}

type CursorContext = Pick<OperationContext<'read'>, 'cursors' | 'principal' | 'store' | 'clock'>;

/**
 * feed_cursor: the cursor to pass as `after` to event_feed to start at the head (`now`) or at the
 * first event stored at or after a time (scoped like the feed: the key's workspace, `read`). Times
 * whose events may have been pruned are refused like an expired cursor (assertTimeNotExpired).
 * Reads only; works whether or not the workspace is verified.
 *
 * `now` is the head as stored (the counter's last seq, which no event lies past), so event_feed
 * after it returns exactly the events emitted after this call; for an empty workspace that is the
 * position event_feed without `after` echoes (the watermark: 0, or the head once all was pruned).
 *
 * A key restricted to mailboxes gets a position made of its own mailboxes' events only
 * (restrictedPosition): its cursors for `now` and for any time move only when its mailboxes get
 * mail, so they tell nothing of the other mailboxes' events.
 */
export async function feedCursor(ctx: CursorContext, input: OperationInput<'feed_cursor'>): Promise<FeedPosition> {
  const { workspaceId, mailboxes } = ctx.principal;
  // Events are stored at whole milliseconds: "at or after t" is "at or after t rounded up to one".
  const atMs = input.at === 'now' ? Infinity : ceilMs(parseInstant('at', input.at));
  const inWorkspace = await ctx.store.positionAt(workspaceId, atMs);
  const found = mailboxes === null ? inWorkspace : await restrictedPosition(ctx, workspaceId, mailboxes, inWorkspace);
  if (atMs !== Infinity) assertTimeNotExpired(found, atMs, ctx.clock.now().getTime());
  return { body: { cursor: ctx.cursors.encode(workspaceId, found.seq) }, atMs, atHead: found.seq >= found.head };
}

/**
 * The workspace's position seen through a key's mailboxes: the last of their events at or before
 * it (stored_at never goes down along the seqs, so that one was stored before the time and each
 * later one of theirs at or after it), or their retention watermark when none is retained; the head
 * is the last of their events, and the watermark theirs. Event_feed after it, with this key, gives
 * exactly what it gives after the workspace's position; the newest stored_at is unknown (0), which
 * makes a time refused only where the mailboxes may have lost events to retention.
 */
async function restrictedPosition(
  ctx: CursorContext,
  workspaceId: string,
  mailboxes: readonly string[],
  inWorkspace: TimePosition,
): Promise<TimePosition> {
  const { store } = ctx;
  const [seq, head, prunedThrough] = await Promise.all([
    store.lastSeqOfMailboxes(workspaceId, mailboxes, inWorkspace.seq),
    inWorkspace.seq >= inWorkspace.head ? undefined : store.lastSeqOfMailboxes(workspaceId, mailboxes, inWorkspace.head),
    store.prunedThroughMailboxes(workspaceId, mailboxes),
  ]);
  const at = Math.max(seq, prunedThrough);
  return { seq: at, head: Math.max(head ?? at, prunedThrough), prunedThrough, newestStoredAtMs: 0 };
}
