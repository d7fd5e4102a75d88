import type { OperationInput } from '../../generated/operations.ts';
import type { HeldSlot, Wake } from '../feed/held-reads.ts';
import type { FeedPage } from '../feed/page.ts';
import type { OperationContext } from './context.ts';
import { eventFeed, type FeedWait } from './event-feed.ts';

export interface FeedStreamOptions {
  /** A place among the held reads, held by the caller for the stream's life. */
  slot: HeldSlot;
  /** The client went away. */
  signal: AbortSignal;
  /** How long a read waits for something new before the stream says it is still there. */
  idleMs: number;
  /** How long the first read may wait (0: the caller answers its outcome, a refused cursor included, before it starts streaming). */
  firstWaitMs?: number;
  /** True once the server shuts down: the stream ends (its client reconnects to another instance). */
  closing?: () => boolean;
  /** Runs each wait (FeedWait.hold). */
  hold?: (wait: () => Promise<Wake>, deadlineMs: number) => Promise<Wake>;
  /** Where a woken read's memory comes from (FeedWait.sharedMemory). */
  sharedMemory?: FeedWait['sharedMemory'];
  /** Before each read after the first, which the request paid for: the key checked again, the read paid and its memory admitted (OperationCall.beforeRead). */
  beforeRead?: () => Promise<void>;
}

/** One step of a stream: a page with its events' types and seqs (facts), or a wait that ended with nothing new. */
export type FeedStreamStep = { page: FeedPage } | { idle: true };

/**
 * event_feed as a stream: page after page from `after` (from the oldest retained event without
 * it), each as soon as the one before was taken, then each new event as it is stored. Every read is
 * an event_feed read with its facts (the seqs give each event its own cursor), held while nothing is
 * new; the reads' rules (scope, expiry, "past the end") are event_feed's, so a stream and pages
 * never disagree. Ends when the client goes away or a read fails (the caller reports the error);
 * every read is paid and admitted by the caller's hooks like a poll's (`beforeRead`, `hold`).
 */
export async function* eventFeedStream(
  ctx: OperationContext,
  input: OperationInput<'event_feed'>,
  options: FeedStreamOptions,
): AsyncGenerator<FeedStreamStep> {
  let after = input.after;
  let waitMs = options.firstWaitMs ?? options.idleMs;
  let first = true;
  while (!options.signal.aborted && !options.closing?.()) {
    if (!first) await options.beforeRead?.();
    first = false;
    const wait = { ms: waitMs, signal: options.signal, slot: options.slot, hold: options.hold, sharedMemory: options.sharedMemory };
    waitMs = options.idleMs;
    const page = await eventFeed(ctx, { ...input, after }, { facts: true, wait });
    if (options.signal.aborted) return;
    after = page.next_cursor;
    yield page.events.count > 0 ? { page } : { idle: true };
  }
}
