import type { IncomingMessage } from 'node:http';
import { streamOperation } from '../calls/answer-operation.ts';
import type { Call } from '../calls/call.ts';
import type { CallServices } from '../calls/call-services.ts';
import type { EdgeResponse } from '../front-door/request-context.ts';
import { answerFor } from '../front-door/temporary-failure.ts';
import { ApiError, invalidArgument, toErrorBody } from '../base/errors.ts';
import { envelopeSlices, type FeedPage } from '../feed/page.ts';
import { safeErrorFields, type Logger } from '../base/log.ts';
import { setRateLimitHeaders } from './rate-limit-headers.ts';

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
 * event_feed as Server-Sent Events (`POST /v1/event_feed` with `Accept: text/event-stream`, and
 * the GET an EventSource opens): the call reads, pays and holds (streamOperation); this frames
 * each page (framesOf), writes it, and waits for the client to take it (else disconnects after
 * stallMs). A refused first read gets the JSON call's status and body; after that, an error is an
 * `error` event and the end of the stream.
 */
export async function streamEventFeed(
  services: CallServices,
  call: Call,
  body: () => Promise<unknown> | unknown,
  req: IncomingMessage,
  res: EdgeResponse,
  requestId: string,
  log: Logger,
): Promise<void> {
  const lastEventId = req.headers['last-event-id'];
  const request = async () => {
    const parsed = await body();
    if (typeof lastEventId === 'string' && lastEventId.length > 512)
      throw invalidArgument('Last-Event-ID must be a cursor (at most 512 characters)');
    return parsed;
  };
  const { workspaceId } = call.principal;
  const refused = await streamOperation(
    services,
    call,
    request,
    {
      open: () => {
        res.writeHead(200, {
          'Content-Type': 'text/event-stream; charset=utf-8',
          'Cache-Control': 'no-store',
          // nginx would otherwise buffer the stream.
          'X-Accel-Buffering': 'no',
        });
        res.write(`retry: ${RETRY_MS}\n\n`);
      },
      write: (page) => {
        const frames = framesOf(page, (seq) => services.cursors.encode(workspaceId, seq));
        if (res.locals) res.locals.bytes = (res.locals.bytes ?? 0) + frames.bytes;
        const room = writeAll(res, frames.chunks);
        const taken = room ? Promise.resolve(true) : drained(res, services.heldReads.limits.stallMs, call.signal);
        return {
          bytes: frames.bytes,
          taken: taken.then((ok) => {
            if (!ok) res.destroy();
            return ok;
          }),
        };
      },
      idle: () => {
        if (!res.writableNeedDrain) res.write(': keep-alive\n\n');
      },
      end: () => res.end(),
      fail: (err) => {
        const answer = answerFor(err);
        const { body: error } = toErrorBody(answer, requestId);
        if (!(answer instanceof ApiError)) log.error({ ...safeErrorFields(err), request_id: requestId }, 'event stream failed');
        res.end(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
      },
    },
    {
      idleMs: KEEP_ALIVE_MS,
      socket: req.socket,
      ...(typeof lastEventId === 'string' && lastEventId !== '' ? { lastEventId } : {}),
    },
  );
  if (!refused) return;
  if (refused.rate) setRateLimitHeaders(res, refused.rate);
  throw refused.error;
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
