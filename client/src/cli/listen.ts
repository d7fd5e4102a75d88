import { createClient, type EventEnvelope } from '../client.js';
import { EventFeedError } from '../errors.js';
import { sleep } from '../retry.js';
import { UsageError, type FeedConfig } from './config.js';
import { acknowledged, deliveryHeaders, newSigningSecret, postDelivery, type PostResult } from './delivery.js';
import { ListenState, type Position } from './listen-state.js';
import { duration, type Paint } from './terminal.js';

export interface ListenOptions {
  forwardTo: string;
  /** `--secret`; without it, the one this setup's state keeps, else a new one (printed). */
  secret: string | undefined;
  stateFile: string;
  /** `--from`: `now`, `start` or a cursor; without it, the saved state, else `now`. */
  from: string | undefined;
  /** How long a delivery may wait for its answer. */
  timeoutMs: number;
}

export interface Terminal {
  /** One delivery's line (stdout). */
  line(text: string): void;
  /** What the command says about itself (stderr). */
  say(text: string): void;
  paint: Paint;
}

/** How `stop()` ends a run: at once (a second Ctrl-C), or after the delivery in flight, given this long. */
export const STOP_GRACE_MS = 3000;
/** Events per page of the feed: the most ids the state holds between two cursors. */
const PAGE = 100;
/** The pauses between a delivery's attempts: doubling from the first, capped (a receiver's Retry-After is honoured up to the cap). */
export const FIRST_BACKOFF_MS = 500;
export const MAX_BACKOFF_MS = 30_000;

export const backoffMs = (failures: number, retryAfterSeconds?: number) =>
  Math.min(MAX_BACKOFF_MS, Math.max(FIRST_BACKOFF_MS * 2 ** (failures - 1), (retryAfterSeconds ?? 0) * 1000));

/** What a run does when told to stop: `stop()` once ends it cleanly, twice at once. */
export interface Stopper {
  stop(): void;
}

/**
 * `event-feed-client listen`: follows the feed (long-polls through the client's `events`) and
 * POSTs each event to `forwardTo` as the service's webhooks would (same body and headers, signed
 * with the secret), in order: the next event only once the previous one was acknowledged (2xx),
 * failures retried in place. The position is saved after every acknowledged delivery, so that a
 * restart sends neither less nor more (at least once: a crash between the receiver's 2xx and the
 * save sends that one event again, with the same webhook-id). Resolves with the exit code.
 */
export async function listen(
  config: FeedConfig,
  options: ListenOptions,
  terminal: Terminal,
  onStopper: (stopper: Stopper) => void,
): Promise<number> {
  const { paint } = terminal;
  const state = new ListenState(options.stateFile, { feedUrl: config.baseUrl, keyId: config.keyId, forwardTo: options.forwardTo });
  const saved = await state.load();
  const madeSecret = options.secret === undefined ? (saved?.secret ?? newSigningSecret()) : undefined;
  const secret = options.secret ?? madeSecret!;

  const feedStop = new AbortController();
  let stopping = false;
  let inFlight: AbortController | undefined;
  let interrupted: string | undefined;
  const wakeUp = new AbortController();
  onStopper({
    stop() {
      if (stopping) {
        inFlight?.abort();
        return;
      }
      stopping = true;
      feedStop.abort();
      wakeUp.abort();
      if (inFlight) {
        terminal.say(`stopping: waiting up to ${duration(STOP_GRACE_MS)} for the delivery in flight (Ctrl-C again to abort it)`);
        const current = inFlight;
        setTimeout(() => current.abort(), STOP_GRACE_MS).unref();
      }
    },
  });

  const client = createClient({
    baseUrl: config.baseUrl,
    apiKey: config.apiKey,
    retry: {
      // A follower outlasts any outage of the service; each retry is said.
      maxRetries: Infinity,
      onRetry: ({ delayMs, error }) => terminal.say(paint('yellow', `feed: ${reason(error)}; trying again in ${duration(delayMs)}`)),
    },
  });

  let position: Position;
  let lastDelivered = saved?.last_delivered ?? null;
  try {
    if (options.from === 'now' || (options.from === undefined && saved === undefined))
      position = { cursor: await client.cursorAt('now', { signal: feedStop.signal }), delivered: [] };
    else if (options.from === 'start') position = { cursor: null, delivered: [] };
    else if (options.from !== undefined) position = { cursor: options.from, delivered: [] };
    else position = { cursor: saved!.cursor, delivered: [...saved!.delivered] };
  } catch (error) {
    if (stopping) return 0;
    return feedFailure(error, terminal);
  }
  const save = () =>
    state.save({
      cursor: position.cursor,
      delivered: position.delivered,
      last_delivered: lastDelivered,
      ...(madeSecret ? { secret: madeSecret } : {}),
    });
  // Saved before anything else: events emitted from now on are not lost if this run stops early.
  await save();

  terminal.say(`Forwarding the events of ${config.baseUrl} (key ${config.keyId}) to ${options.forwardTo}`);
  terminal.say(
    madeSecret
      ? `Signing with ${paint('bold', madeSecret)} (made by this command and kept in ${options.stateFile} for the next runs): configure your receiver with it, or pass --secret`
      : 'Signing with the secret given (--secret)',
  );
  terminal.say(`${startingPoint(options.from, saved !== undefined, position)}; state in ${options.stateFile}. Ctrl-C to stop.`);

  /** Sends one event until it is acknowledged (true), or until the run stops (false). */
  async function deliver(event: EventEnvelope): Promise<boolean> {
    // The envelope's JSON as the service stores and sends it: the envelope the feed served,
    // serialised again, gives back the same text (the service writes it with JSON.stringify).
    const body = JSON.stringify(event);
    for (let failures = 0; ;) {
      const timestamp = Math.floor(Date.now() / 1000);
      inFlight = new AbortController();
      const result = await postDelivery(
        options.forwardTo,
        deliveryHeaders([secret], event.id, timestamp, body),
        body,
        options.timeoutMs,
        inFlight.signal,
      );
      inFlight = undefined;
      if (acknowledged(result)) {
        terminal.line(deliveryLine(paint, event, result, ''));
        return true;
      }
      failures++;
      const delay = backoffMs(failures, result.retryAfterSeconds);
      const retrying = !stopping && result.error !== 'aborted';
      terminal.line(deliveryLine(paint, event, result, retrying ? paint('yellow', `  retry ${failures} in ${duration(delay)}`) : ''));
      if (retrying) {
        try {
          await sleep(delay, wakeUp.signal);
          continue;
        } catch {
          // stopped while waiting
        }
      }
      interrupted = event.id;
      return false;
    }
  }

  let skip = new Set(position.delivered);
  try {
    for await (const event of client.events({
      after: position.cursor ?? undefined,
      follow: true,
      limit: PAGE,
      signal: feedStop.signal,
      onCheckpoint: async (cursor) => {
        position = { cursor, delivered: [] };
        skip = new Set();
        await save();
      },
    })) {
      // Acknowledged by an earlier run after the saved cursor: not sent twice.
      if (skip.has(event.id)) continue;
      if (!(await deliver(event))) break;
      position.delivered.push(event.id);
      lastDelivered = event.id;
      await save();
      if (stopping) break;
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    return feedFailure(error, terminal);
  }

  const resumes = lastDelivered
    ? `after ${lastDelivered}, the last event acknowledged`
    : position.cursor
      ? 'from the saved cursor'
      : 'from the oldest event';
  if (interrupted) terminal.say(`${interrupted} was not acknowledged: the next run sends it again (same webhook-id).`);
  terminal.say(`Stopped. The next run resumes ${resumes} (state in ${options.stateFile}).`);
  return 0;
}

function startingPoint(from: string | undefined, hadState: boolean, position: Position): string {
  if (from === 'now' || (from === undefined && !hadState))
    return `${hadState ? '' : 'No saved state for this setup: '}starting from now (events emitted from now on)`;
  if (from === 'start') return 'Starting from the oldest event the service keeps';
  if (from !== undefined) return 'Starting after the cursor given';
  return `Resuming from the saved state${position.delivered.length ? ` (${position.delivered.length} event(s) of its page already acknowledged)` : ''}`;
}

/** `2026-11-28 10:02:03  evt_…  mail.bounced  200  12 ms`, or the failure and when it is tried again. */
function deliveryLine(paint: Paint, event: EventEnvelope, result: PostResult, after: string): string {
  const time = new Date().toISOString().replace('T', ' ').slice(0, 19);
  const ok = acknowledged(result);
  const status = result.status === null ? paint('red', `--- ${result.error}`) : paint(ok ? 'green' : 'red', String(result.status));
  return `${paint('dim', time)}  ${event.id}  ${event.type}  ${status}  ${duration(result.latencyMs)}${after}`;
}

function reason(error: unknown): string {
  if (error instanceof EventFeedError) return `${error.code} (${error.status}): ${error.message}`;
  // fetch's network failures say only "fetch failed"; the socket's code is in the cause.
  const code = (error as { cause?: { code?: unknown } }).cause?.code;
  return `${(error as Error).message}${typeof code === 'string' ? ` (${code})` : ''}`;
}

/** A refusal the feed will not change its mind about (a key without read, a cursor it refuses): exit 2; anything else: 1. */
function feedFailure(error: unknown, terminal: Terminal): number {
  if (error instanceof EventFeedError && !error.retryable) {
    const hint =
      error.code === 'invalid_argument'
        ? ' (a cursor of another deployment, or too old? start with --from now or --from start)'
        : ' (check EVENT_FEED_KEY: a key with the read permission)';
    terminal.say(terminal.paint('red', `the feed refused: ${reason(error)}${hint}`));
    return 2;
  }
  terminal.say(terminal.paint('red', `listen failed: ${reason(error)}`));
  return 1;
}
