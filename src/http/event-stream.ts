import type { IncomingMessage } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Operations } from '../../generated/operations.ts';
import { WOKEN_ADMISSION_WAIT_MS, type OperationCall } from '../edge/operation-call.ts';
import type { EdgeResponse } from '../edge/request-context.ts';
import { ApiError, invalidArgument, toErrorBody } from '../errors.ts';
import { envelopeSlices, type FeedPage } from '../feed/page.ts';
import { PAGE_RESERVATION_BYTES } from '../limits/page-bytes.ts';
import type { Reservation } from '../limits/memory-budget.ts';
import { safeErrorFields, type Logger } from '../log.ts';
import type { AppServices } from '../operations/context.ts';
import { eventFeedStream } from '../operations/event-feed-stream.ts';
import { withDefaults } from '../operations/registry.ts';
import { withoutIdleTimeout } from './held-socket.ts';

/** While nothing is new, a comment this often: proxies and the socket timeout see a live connection. */
const KEEP_ALIVE_MS = 15_000;
/** What an EventSource waits before reconnecting after a drop. */
const RETRY_MS = 2000;

/**
 * Whether the request asks for the feed as Server-Sent Events: `text/event-stream` preferred to
 * JSON by its `Accept` quality values (RFC 9110 §12.5.1), a named type winning over a wildcard of
 * the same quality. Listed with `application/json` at the same quality (as MCP clients send), or at
 * q=0, it gets the JSON page.
 */
export function wantsEventStream(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  if (!accept || accept.length > 1024) return false;
  let stream = 0;
  let json = 0;
  let wildcard = 0;
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const q = Number(params.find((p) => /^q\s*=/.test(p))?.replace(/^q\s*=\s*/, '') ?? 1);
    const quality = Number.isFinite(q) ? Math.min(Math.max(q, 0), 1) : 0;
    if (type === 'text/event-stream') stream = Math.max(stream, quality);
    else if (type === 'application/json') json = Math.max(json, quality);
    else if (type === 'application/*' || type === '*/*') wildcard = Math.max(wildcard, quality);
  }
  return stream > 0 && stream > json && stream >= wildcard;
}

/**
 * `POST /v1/event_feed` with `Accept: text/event-stream`: the feed as Server-Sent Events
 * (operations/event-feed-stream.ts gives the pages; this file frames them). The first read is
 * made before anything is sent, so a refused cursor gets the JSON call's status and body; after
 * that, an error is an `error` event and the end of the stream.
 *
 * What a stream may hold is bounded like a page: one read at a time, its memory admitted
 * (limits/memory-budget.ts) while it is read and written, nothing while the stream waits; the next
 * read only once the client took the last one (else disconnected after STALL_MS); each read paid
 * like a poll plus its bytes, the stream pausing while the key is over its rate.
 */
export async function streamEventFeed(services: AppServices, call: OperationCall<'event_feed'>, request: Operations['event_feed']['request'], req: IncomingMessage, res: EdgeResponse, requestId: string, log: Logger): Promise<void> {
  const input = withDefaults('event_feed', request);
  const lastEventId = req.headers['last-event-id'];
  if (typeof lastEventId === 'string' && lastEventId !== '') {
    if (lastEventId.length > 512) throw invalidArgument('Last-Event-ID must be a cursor (at most 512 characters)');
    input.after = lastEventId;
  }
  const { principal } = call.context;
  const slot = services.heldReads.hold(principal.keyId, 'stream');
  const gone = new AbortController();
  res.once('close', () => gone.abort());
  let memory: Reservation | undefined;
  const admit = async (maxWaitMs?: number) => (memory = await services.memory.admit(principal.workspaceId, PAGE_RESERVATION_BYTES, maxWaitMs));
  const letGo = () => {
    memory?.release();
    memory = undefined;
  };
  try {
    await admit();
    const whileHeld = async <T>(wait: () => Promise<T>): Promise<T> => {
      letGo();
      try {
        return await withoutIdleTimeout(req.socket, wait);
      } finally {
        await admit(WOKEN_ADMISSION_WAIT_MS);
      }
    };
    const steps = eventFeedStream(call.context, input, { slot, signal: gone.signal, idleMs: KEEP_ALIVE_MS, firstWaitMs: 0, whileHeld, closing: () => services.heldReads.closing });
    // The first read, before the status line: a cursor refused is answered as the JSON call would.
    let step = await steps.next();
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store',
      // nginx would otherwise buffer the stream.
      'X-Accel-Buffering': 'no',
    });
    res.write(`retry: ${RETRY_MS}\n\n`);
    while (!step.done) {
      const value = step.value;
      if ('page' in value) {
        const frames = framesOf(value.page, (seq) => services.cursors.encode(principal.workspaceId, seq));
        memory?.resize(frames.bytes + PAGE_OVERHEAD_BYTES);
        services.rateLimiter.chargeForBytes(principal.keyId, frames.bytes);
        if (res.locals) res.locals.bytes = (res.locals.bytes ?? 0) + frames.bytes;
        services.metrics?.pageServed('event_feed', 'http', frames.bytes);
        if (!writeAll(res, frames.chunks) && !(await drained(res, services.heldReads.limits.stallMs, gone.signal))) return void res.destroy();
      } else if (!res.writableNeedDrain) res.write(': keep-alive\n\n');
      if (!(await paidForNextRead(services, principal.keyId, gone.signal))) break;
      step = await steps.next();
    }
    res.end();
  } catch (err) {
    if (!res.headersSent) throw err;
    if (gone.signal.aborted) return;
    const { body } = toErrorBody(err, requestId);
    if (!(err instanceof ApiError)) log.error({ ...safeErrorFields(err), request_id: requestId }, 'event stream failed');
    res.end(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
  } finally {
    slot.release();
    letGo();
  }
}

/** What a written page holds besides its frames (the response's own buffers). */
const PAGE_OVERHEAD_BYTES = 64 * 1024;

/** One SSE event per envelope: `id` its cursor, `event` its type, `data` the envelope's stored bytes. */
function framesOf(page: FeedPage, cursorOf: (seq: number) => string): { chunks: Array<string | Buffer>; bytes: number } {
  const envelopes = envelopeSlices(page.events.bytes);
  const { types, seqs } = page.events.facts ?? {};
  if (!types || !seqs || envelopes.length !== page.events.count || seqs.length !== envelopes.length) throw new Error('a stream page came without one seq and type per event');
  const chunks: Array<string | Buffer> = [];
  let bytes = 0;
  envelopes.forEach((envelope, i) => {
    const head = `id: ${cursorOf(seqs[i]!)}\nevent: ${types[i]}\ndata: `;
    // Stored envelopes are one line of JSON; a line break would end `data:` early, so it is taken out.
    const data = envelope.includes(0x0a) || envelope.includes(0x0d) ? JSON.stringify(JSON.parse(envelope.toString('utf8'))) : envelope;
    chunks.push(head, data, '\n\n');
    bytes += Buffer.byteLength(head) + Buffer.byteLength(data) + 2;
  });
  return { chunks, bytes };
}

/** Writes the chunks in one go; false when the response's buffer is full (wait for 'drain'). */
function writeAll(res: EdgeResponse, chunks: Array<string | Buffer>): boolean {
  res.cork();
  let room = true;
  for (const chunk of chunks) room = res.write(chunk) && room;
  process.nextTick(() => res.uncork());
  return room;
}

/** True once the client has taken what was written; false if it has not within `stallMs` (at most one read, ≤ 1 MiB of events, waits for it), or went away. */
function drained(res: EdgeResponse, stallMs: number, gone: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      res.off('drain', onDrain);
      gone.removeEventListener('abort', onGone);
      resolve(ok);
    };
    const onDrain = () => done(true);
    const onGone = () => done(false);
    const timer = setTimeout(() => done(false), stallMs);
    res.on('drain', onDrain);
    gone.addEventListener('abort', onGone, { once: true });
  });
}

/** Each read after the first takes a token like a poll; while the key has none, the stream waits (false: the client went away). */
async function paidForNextRead(services: AppServices, keyId: string, gone: AbortSignal): Promise<boolean> {
  const limiter = services.rateLimiter;
  while (limiter.enabled && !limiter.keys.spend(keyId, 1)) {
    const woke = await sleep(Math.max(100, limiter.keys.retryAfterSeconds(keyId) * 1000), true, { signal: gone }).catch(() => false);
    if (!woke) return false;
  }
  return !gone.aborted;
}
