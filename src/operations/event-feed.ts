import type { OperationInput } from '../../generated/operations.ts';
import type { FeedPage } from '../feed/page.ts';
import { FeedScope } from '../feed/scope.ts';
import { requirePermission, type OperationContext } from './context.ts';

/** How the caller will show the page: `facts` adds each event's type and time (the MCP text), read with the page. */
export interface FeedView {
  facts?: boolean;
}

/**
 * event_feed: the events after a cursor (or from the oldest retained one), in emission order, as
 * far as the key's mailboxes go. Reads only: no row written, no event emitted. Works whether or
 * not the workspace is verified (the feed never looks at it).
 */
export async function eventFeed(ctx: Pick<OperationContext, 'cursors' | 'principal' | 'feed'>, input: OperationInput<'event_feed'>, view: FeedView = {}): Promise<FeedPage> {
  requirePermission(ctx.principal, 'read');
  const { workspaceId, mailboxes } = ctx.principal;
  const afterSeq = input.after === undefined ? undefined : ctx.cursors.decode(workspaceId, input.after);
  const read = await ctx.feed.read({ workspaceId, scope: FeedScope.of(mailboxes), afterSeq, limit: input.limit, withFacts: view.facts === true });
  const { events } = read;
  if (events.lastSeq !== undefined) return { events, next_cursor: ctx.cursors.encode(workspaceId, events.lastSeq) };
  // Nothing new for this key: its own cursor back, byte for byte (a restricted key's cursor follows
  // the last event it was given, so it echoes even while other mailboxes move on); without one,
  // where the read began.
  return { events, next_cursor: input.after ?? ctx.cursors.encode(workspaceId, read.afterSeq) };
}
