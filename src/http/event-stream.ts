import type { IncomingMessage } from 'node:http';
import type { OperationIdWith, Operations } from '../../generated/operations.ts';
import type { OperationCall } from '../edge/operation-call.ts';
import type { EdgeResponse } from '../edge/request-context.ts';
import { answerFor } from '../edge/temporary-failure.ts';
import { ApiError, invalidArgument, toErrorBody } from '../errors.ts';
import { envelopeSlices, type FeedPage } from '../feed/page.ts';
import { safeErrorFields, type Logger } from '../log.ts';
import type { AppServices } from '../app/services.ts';
import { eventFeedStream } from '../operations/event-feed-stream.ts';
import { withDefaults } from '../operations/registry.ts';
import { withoutIdleTimeout } from './held-socket.ts';

/** While nothing is new, a comment this often: proxies and the socket timeout see a live connection. */
const KEEP_ALIVE_MS = 15_000;
/** What an EventSource waits before reconnecting after a drop. */
const RETRY_MS = 2000;

/**
 * The operations the contract lets answer a stream (`x-may-stream`): event_feed, whose stream
 * eventFeedStream reads. Another would not type-check here until it has a stream of its own.
 */
type StreamedId = OperationIdWith<'mayStream'>;

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
 * (eventFeedStream gives the pages; framesOf frames them). The first read is
 * made before anything is sent, so a refused cursor gets the JSON call's status and body; after
 * that, an error is an `error` event and the end of the stream (a revoked key's too: the call
 * watches for it, Call.watchRevocation).
 *
 * What a stream costs is its call's to count (OperationCall.beforeRead, hold): each read paid like
 * a poll (the stream pausing while the key is over its rate), its memory admitted at a page's worst
 * case before it is read and held at its real size until the client took it; nothing while the
 * stream waits. The next read only once the client took the last one (else disconnected after
 * stallMs).
 */
export async function streamEventFeed(
  services: AppServices,
  op: OperationCall<StreamedId>,
  request: Operations[StreamedId]['request'],
  req: IncomingMessage,
  res: EdgeResponse,
  requestId: string,
  log: Logger,
): Promise<void> {
  const input = withDefaults(op.operationId, request);
  const lastEventId = req.headers['last-event-id'];
  if (typeof lastEventId === 'string' && lastEventId !== '') {
    if (lastEventId.length > 512) throw invalidArgument('Last-Event-ID must be a cursor (at most 512 characters)');
    input.after = lastEventId;
  }
  const { call } = op;
  const { principal } = call;
  const slot = services.heldReads.hold(principal, 'stream');
  try {
    const steps = eventFeedStream(op.context, input, {
      slot,
      signal: call.signal,
      idleMs: KEEP_ALIVE_MS,
      firstWaitMs: 0,
      hold: (wait, deadlineMs) => op.hold(() => withoutIdleTimeout(req.socket, wait), deadlineMs),
      beforeRead: () => op.beforeRead(),
      sharedMemory: op.sharedReadMemory,
      closing: () => services.heldReads.closing,
    });
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
        op.settle(frames.bytes);
        if (res.locals) res.locals.bytes = (res.locals.bytes ?? 0) + frames.bytes;
        services.metrics?.pageServed(op.operationId, 'http', frames.bytes);
        if (!writeAll(res, frames.chunks) && !(await drained(res, services.heldReads.limits.stallMs, call.signal)))
          return void res.destroy();
        // Taken by the client: its memory goes back before the next read admits its own.
        call.letGoOfMemory();
      } else if (!res.writableNeedDrain) res.write(': keep-alive\n\n');
      step = await steps.next();
    }
    res.end();
  } catch (err) {
    if (!res.headersSent) throw err;
    if (call.ended && !call.revoked) return;
    const answer = answerFor(err);
    const { body } = toErrorBody(answer, requestId);
    if (!(answer instanceof ApiError)) log.error({ ...safeErrorFields(err), request_id: requestId }, 'event stream failed');
    res.end(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
  } finally {
    slot.release();
    call.letGoOfMemory();
  }
}

/** The frames already made of a page read (a read shared by streams woken together, SharedReads): made once, written to each. */
const framed = new WeakMap<FeedPage['events'], { chunks: Array<string | Buffer>; bytes: number }>();

/**
 * One SSE message per envelope: `id` its cursor, `data` the envelope's stored bytes, and no
 * `event` line, so an EventSource's `onmessage` gets every event, of whatever type, including types
 * added later (the type is in the data).
 */
function framesOf(page: FeedPage, cursorOf: (seq: number) => string): { chunks: Array<string | Buffer>; bytes: number } {
  const made = framed.get(page.events);
  if (made) return made;
  const frames = frame(page, cursorOf);
  framed.set(page.events, frames);
  return frames;
}

function frame(page: FeedPage, cursorOf: (seq: number) => string): { chunks: Array<string | Buffer>; bytes: number } {
  const envelopes = envelopeSlices(page.events.bytes);
  const seqs = page.events.facts?.seqs;
  if (!seqs || envelopes.length !== page.events.count || seqs.length !== envelopes.length)
    throw new Error('a stream page came without one seq per event');
  const chunks: Array<string | Buffer> = [];
  let bytes = 0;
  envelopes.forEach((envelope, i) => {
    const head = `id: ${cursorOf(seqs[i]!)}\ndata: `;
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
