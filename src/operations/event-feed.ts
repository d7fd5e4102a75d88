import type { OperationInput } from '../../generated/operations.ts';
import type { FeedPage } from '../feed/page.ts';
import type { FeedRead, FeedReadResult } from '../feed/reader.ts';
import { FeedScope } from '../feed/scope.ts';
import type { OperationContext } from './context.ts';

/** How one read is made, beyond its request: what the caller shows of it, and whether it may share another's. */
export interface ReadView {
  /** Each event's type, time and seq, read with the page (the MCP text, an event stream's frames). */
  facts?: boolean;
  /** A held read woken by a move heard at this time (Watch.wokenAt): it may share an identical read begun since (SharedReads). */
  wokenAt?: number;
  /** A follower's first read (a held poll's): it may share an identical read begun after it arrived. */
  shareFirst?: boolean;
}

type FeedContext = Pick<OperationContext<'read'>, 'cursors' | 'principal' | 'feed' | 'budget'>;

/**
 * event_feed: the events after a cursor (or from the oldest retained one), in emission order, as
 * far as the key's mailboxes go. One read: reads only, no row written, no event emitted; works
 * whether or not the workspace is verified (the feed never looks at it). Its page's memory is
 * admitted by the read itself, through the call's budget (ctx.budget), once it knows it has a page
 * to read. A read held while nothing is new (`Prefer: wait`, event streams) is this read made again
 * after each move of the workspace (heldRead, streamReads): its rules (scope, expiry, "past the
 * end") are this read's, so held reads, streams and pages never disagree.
 */
export async function eventFeed(ctx: FeedContext, input: OperationInput<'event_feed'>, view: ReadView = {}): Promise<FeedPage> {
  const { workspaceId, mailboxes } = ctx.principal;
  const read: FeedRead = {
    workspaceId,
    scope: FeedScope.of(mailboxes),
    afterSeq: input.after === undefined ? undefined : ctx.cursors.decode(workspaceId, input.after),
    limit: input.limit,
    withFacts: view.facts === true,
    ...(ctx.budget ? { budget: ctx.budget } : {}),
    ...(view.wokenAt !== undefined ? { wokenAt: view.wokenAt } : {}),
    ...(view.shareFirst ? { arrivedAt: performance.now() } : {}),
  };
  return pageOf(ctx, input, await ctx.feed.read(read));
}

function pageOf(ctx: FeedContext, input: OperationInput<'event_feed'>, read: FeedReadResult): FeedPage {
  const { workspaceId } = ctx.principal;
  const { events } = read;
  if (events.lastSeq !== undefined) return { events, next_cursor: ctx.cursors.encode(workspaceId, events.lastSeq) };
  // Nothing new for this key: its own cursor back, byte for byte (a restricted key's cursor follows
  // the last event it was given, so it echoes even while other mailboxes move on); without one,
  // where the read began (so a read made again from there reads on from the same place).
  return { events, next_cursor: input.after ?? ctx.cursors.encode(workspaceId, read.afterSeq) };
}
