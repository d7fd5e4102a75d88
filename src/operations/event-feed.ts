import type { OperationInput } from '../../generated/operations.ts';
import type { HeldSlot, Wake } from '../feed/held-reads.ts';
import type { FeedPage } from '../feed/page.ts';
import type { FeedRead, FeedReadResult } from '../feed/reader.ts';
import type { SharedReadMemory } from '../feed/shared-reads.ts';
import { FeedScope } from '../feed/scope.ts';
import { requirePermission, type OperationContext } from './context.ts';

/** How the caller will show the page, and whether it may be held while nothing is new. */
export interface FeedView {
  /** Each event's type, time and seq, read with the page (the MCP text, an event stream's frames). */
  facts?: boolean;
  wait?: FeedWait;
  /** Admits the page's memory once a page is to be read (FeedRead.admit), for a caller that did not before reading. */
  admit?: () => Promise<void>;
  /** Lets the first read share an identical read begun after the request arrived, and its memory (FeedRead.firstReadMemory). */
  firstReadMemory?: SharedReadMemory;
}

/** A read held open while nothing is new (`Prefer: wait`, event streams): HeldReads. */
export interface FeedWait {
  /** Held at most this long (0: answered at once, like any read). */
  ms: number;
  /** The call ended (its client went away, its key was revoked): stop waiting. */
  signal?: AbortSignal;
  /**
   * Runs the wait, given the time it ends (performance.now()): the call lets go meanwhile of what a
   * page read holds, and before the read that follows a move, checks the key again and pays for the
   * read (OperationCall.hold).
   */
  hold?: (wait: () => Promise<Wake>, deadlineMs: number) => Promise<Wake>;
  /** A place among the held reads taken by the caller for longer than this read (a stream holds one for its life). */
  slot?: HeldSlot;
  /** Where a woken read's memory comes from: one reservation for the calls that share the read (SharedReads). */
  sharedMemory?: SharedReadMemory;
}

/** Without `heldReads` (the stress harness, unit tests), a read is never held. */
type FeedContext = Pick<OperationContext, 'cursors' | 'principal' | 'feed'> & Partial<Pick<OperationContext, 'heldReads'>>;

/**
 * event_feed: the events after a cursor (or from the oldest retained one), in emission order, as
 * far as the key's mailboxes go. Reads only: no row written, no event emitted. Works whether or
 * not the workspace is verified (the feed never looks at it).
 *
 * With `view.wait`, a read that finds nothing new is held until a commit of the workspace is
 * heard (for a restricted key, one that may hold events of its mailboxes), then read again, until
 * it finds something this key may see or the time is up: a restricted key is answered only for its
 * mailboxes' events. Each read is the same read as an
 * immediate one (its answer includes every event whose emit was answered before it began), and
 * the watch on the workspace begins before it, so a commit between a read and its wait is not slept
 * through.
 */
export async function eventFeed(ctx: FeedContext, input: OperationInput<'event_feed'>, view: FeedView = {}): Promise<FeedPage> {
  requirePermission(ctx.principal, 'read');
  const { workspaceId, mailboxes } = ctx.principal;
  const read: FeedRead = {
    workspaceId,
    scope: FeedScope.of(mailboxes),
    afterSeq: input.after === undefined ? undefined : ctx.cursors.decode(workspaceId, input.after),
    limit: input.limit,
    withFacts: view.facts === true,
    ...(view.admit ? { admit: view.admit } : {}),
    ...(view.firstReadMemory ? { arrivedAt: performance.now(), firstReadMemory: view.firstReadMemory } : {}),
  };
  const wait = view.wait;
  const heldReads = ctx.heldReads;
  if (!wait || wait.ms <= 0 || !heldReads) return pageOf(ctx, input, await ctx.feed.read(read));

  const deadline = performance.now() + wait.ms;
  let slot: HeldSlot | undefined;
  let first: FeedReadResult | undefined;
  try {
    for (;;) {
      const watch = heldReads.watch(workspaceId, mailboxes);
      try {
        const result = await ctx.feed.read(read);
        first ??= result;
        if (result.events.count > 0) return pageOf(ctx, input, result);
        // Read on from where this read stood (without a cursor: the oldest retained event's predecessor).
        read.afterSeq = result.afterSeq;
        slot ??= wait.slot ?? heldReads.hold(ctx.principal);
        const until = () => watch.until(deadline, wait.signal);
        const why = await (wait.hold ? wait.hold(until, deadline) : until());
        if (why !== 'moved') return pageOf(ctx, input, first);
        // Polls woken by one commit may share one read begun after it, and its memory (SharedReads).
        read.wokenAt = watch.wokenAt;
        read.sharedMemory = wait.sharedMemory;
        if (wait.sharedMemory) delete read.admit;
      } finally {
        watch.cancel();
      }
    }
  } finally {
    if (slot !== wait.slot) slot?.release();
  }
}

function pageOf(ctx: FeedContext, input: OperationInput<'event_feed'>, read: FeedReadResult): FeedPage {
  const { workspaceId } = ctx.principal;
  const { events } = read;
  if (events.lastSeq !== undefined) return { events, next_cursor: ctx.cursors.encode(workspaceId, events.lastSeq) };
  // Nothing new for this key: its own cursor back, byte for byte (a restricted key's cursor follows
  // the last event it was given, so it echoes even while other mailboxes move on); without one,
  // where the read began.
  return { events, next_cursor: input.after ?? ctx.cursors.encode(workspaceId, read.afterSeq) };
}
