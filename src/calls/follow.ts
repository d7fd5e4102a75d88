import type { Socket } from 'node:net';
import type { Operations } from '../../generated/operations.ts';
import type { FeedPage } from '../feed/page.ts';
import type { HeldSlot, Wake } from '../feed/held-reads.ts';
import type { OperationContext } from '../operations/context.ts';
import { runOperation, type OperationOutcome } from '../operations/registry.ts';
import type { Call } from './call.ts';
import type { CallServices } from './call-services.ts';

type FeedRequest = Operations['event_feed']['request'];

/** The server's idle timeout closes a connection where nothing moves, for a client that stopped reading: not while a read is held on purpose. */
async function withoutIdleTimeout<T>(socket: Socket | undefined, wait: () => Promise<T>): Promise<T> {
  if (!socket) return wait();
  const before = socket.timeout ?? 0;
  socket.setTimeout(0);
  try {
    return await wait();
  } finally {
    if (!socket.destroyed) socket.setTimeout(before);
  }
}

interface Hold {
  waitMs: number;
  socket?: Socket;
  facts?: boolean;
  /** A place among the held reads taken for longer than this read (a stream holds one for its life). */
  slot?: HeldSlot;
  /**
   * A follower's first read may share an identical one begun after it arrived (a held poll's); not
   * a stream's, whose next page's memory the call admitted already (Call.beforeRead).
   */
  shareFirst?: boolean;
}

/**
 * event_feed read until it finds something new or `hold.waitMs` is up: each read is the operation's
 * one read (runOperation), made again after each move of the workspace heard (HeldReads). The watch
 * begins before each read, so a commit between a read and its wait is not slept through; a restricted
 * key is woken only by commits that may hold its mailboxes' events. Between reads the call holds
 * neither tokens nor memory, and each read after a wake is paid first (Call.waitBetweenReads); a
 * follower's first read may share an identical one, and woken reads share theirs (SharedReads).
 * Answers the first read's outcome when nothing came (its cursor echoed).
 */
export async function heldRead(
  services: CallServices,
  call: Call,
  ctx: OperationContext<'read'>,
  request: FeedRequest,
  hold: Hold,
): Promise<OperationOutcome<'event_feed'>> {
  const { heldReads } = services;
  const { workspaceId, mailboxes } = call.principal;
  const deadline = performance.now() + hold.waitMs;
  let slot: HeldSlot | undefined;
  let first: OperationOutcome<'event_feed'> | undefined;
  let input = request;
  let wokenAt: number | undefined;
  try {
    for (;;) {
      const watch = heldReads.watch(workspaceId, mailboxes);
      try {
        const outcome = await runOperation('event_feed', ctx, input, {
          facts: hold.facts,
          wokenAt,
          shareFirst: wokenAt === undefined && hold.shareFirst === true,
        });
        first ??= outcome;
        if (outcome.result.events.count > 0 || hold.waitMs <= 0) return outcome;
        // Read on from where this read stood (without a cursor: the oldest retained event's predecessor).
        input = { ...input, after: outcome.result.next_cursor };
        slot ??= hold.slot ?? heldReads.hold(call.principal);
        const why: Wake = await call.waitBetweenReads(
          () => withoutIdleTimeout(hold.socket, () => watch.until(deadline, call.signal)),
          deadline,
        );
        if (why !== 'moved') return first;
        wokenAt = watch.wokenAt;
      } finally {
        watch.cancel();
      }
    }
  } finally {
    if (slot !== hold.slot) slot?.release();
  }
}

/** One step of a stream: a page with its events' types and seqs (facts), or a wait that ended with nothing new. */
export type StreamStep = { page: FeedPage } | { idle: true };

/**
 * event_feed as a stream: page after page from `after` (from the oldest retained event without
 * it), each as soon as the one before was taken, then each new event as it is stored. Every read
 * is a held read with its facts (the seqs give each event its own cursor), held up to `idleMs`;
 * every read after the first (which the request paid for) is paid and admitted first
 * (Call.beforeRead). Ends when the client goes away, the server closes, or a read fails.
 */
export async function* streamReads(
  services: CallServices,
  call: Call,
  ctx: OperationContext<'read'>,
  request: FeedRequest,
  options: { idleMs: number; socket?: Socket },
): AsyncGenerator<StreamStep> {
  const slot = services.heldReads.hold(call.principal, 'stream');
  try {
    let after = request.after;
    // The first read is answered at once: a refused cursor gets the JSON call's status and body.
    let waitMs = 0;
    let first = true;
    while (!call.signal.aborted && !services.heldReads.closing) {
      if (!first) await call.beforeRead();
      first = false;
      const outcome = await heldRead(services, call, ctx, { ...request, after }, { waitMs, socket: options.socket, facts: true, slot });
      waitMs = options.idleMs;
      if (call.signal.aborted) return;
      const page = outcome.result;
      after = page.next_cursor;
      yield page.events.count > 0 ? { page } : { idle: true };
    }
  } finally {
    slot.release();
  }
}
