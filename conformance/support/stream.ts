import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { env } from './deployment.ts';
import { pacedFetch, RateLimitBudgetSpent } from './rate-limits.ts';
import { test } from './test.ts';

/**
 * `event_feed` as Server-Sent Events (`Accept: text/event-stream`), read as it comes. Playwright's
 * request context only hands over whole bodies, and a stream never ends by itself: these reads go
 * through `fetch`, still paced by the deployment's rate limits (a spent wait bound skips the check,
 * with the reason), and every one is bounded: in time, in bytes and in events, then closed.
 */

/** One SSE event as the client sees it: the fields of its block (undefined when the block has none). */
export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

export interface StreamRead {
  status: number;
  headers: Record<string, string>;
  /** The whole body when the answer was not a stream (a refusal), else ''. */
  text: string;
  /** The body parsed as JSON when it was not a stream. */
  body: any;
  events: SseEvent[];
  /** Comment lines (`: keep-alive`), with when they came (ms after the answer's headers). */
  comments: Array<{ text: string; atMs: number }>;
  /** When the answer's headers came (epoch ms). */
  openedAt: number;
  /** When each event came, ms after the answer's headers. */
  eventAtMs: number[];
  /** The `retry:` fields seen. */
  retries: string[];
  /** Why the read stopped: enough events, the `until` condition, the time or byte bound, or the server ended it. */
  stoppedBy: 'events' | 'until' | 'time' | 'bytes' | 'ended';
  bytes: number;
  elapsedMs: number;
}

export interface StreamOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Stop after this many events (default 300). */
  maxEvents?: number;
  /** Stop after this long reading, once the answer's headers came (default 20 s). */
  maxMs?: number;
  /** Stop after this many bytes (default 8 MiB). */
  maxBytes?: number;
  /** Stop as soon as this holds (checked after each event and comment). */
  until?: (read: StreamRead) => boolean;
  /** Called once the answer's headers came and the stream is open: emit an event, say. */
  onOpen?: () => Promise<void> | void;
  /** Read `GET <path>` instead (the EventSource form, `/v1/event_feed/stream?token=…`): no body, no key header. */
  getPath?: string;
}

/** How long the kit waits for a stream's status line and headers. */
export const STREAM_ANSWER_MS = 10_000;

/**
 * A stream that got no answer at all within STREAM_ANSWER_MS (a proxy that buffers whole bodies
 * never answers one) is remembered for the run, so that each later stream check fails at once
 * instead of waiting as long again. The run is the Playwright runner (the workers' parent process):
 * a failing check starts a new worker, whose memory starts empty, so the note lives in a file.
 */
const unansweredNote = () => (process.env.EVENT_FEED_WAIT_LEDGER ? `${process.env.EVENT_FEED_WAIT_LEDGER}.unanswered-stream` : undefined);
let unansweredHere: string | undefined;

function earlierUnanswered(): string | undefined {
  if (unansweredHere) return unansweredHere;
  const file = unansweredNote();
  if (!file || !existsSync(file)) return undefined;
  const [runner, ...why] = readFileSync(file, 'utf8').split('\n');
  return runner === String(process.ppid) ? why.join('\n') : undefined;
}

function rememberUnanswered(why: string): void {
  unansweredHere = why;
  const file = unansweredNote();
  if (file) writeFileSync(file, `${process.ppid}\n${why}`);
}

/**
 * Opens `POST /v1/event_feed` with `Accept: text/event-stream` for `key` (or `GET getPath`, the
 * EventSource form with a stream token) and reads it within the
 * bounds, then closes it. A 429 is waited out like any request of the kit; a spent wait bound skips
 * the calling check with the reason. An answer that is not a stream (a refusal) is returned whole.
 */
export async function readStream(key: string | undefined, options: StreamOptions = {}): Promise<StreamRead> {
  const earlier = earlierUnanswered();
  if (earlier) throw new Error(`${earlier} (an earlier stream of this run; not tried again)`);
  const { maxEvents = 300, maxMs = 20_000, maxBytes = 8 * 1024 * 1024 } = options;
  const authorization = key ? `Bearer ${key}` : undefined;
  const controller = new AbortController();
  const url = new URL(options.getPath ?? '/v1/event_feed', env.baseUrl);
  const send = async () => {
    const timer = setTimeout(() => controller.abort(new Error('no answer')), STREAM_ANSWER_MS);
    try {
      if (options.getPath !== undefined)
        return await fetch(url, { headers: { accept: 'text/event-stream', ...options.headers }, signal: controller.signal });
      return await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          ...(authorization ? { authorization } : {}),
          ...options.headers,
        },
        body: options.body === undefined ? '{}' : typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
        signal: controller.signal,
      });
    } catch (error) {
      if (controller.signal.aborted) {
        const why = `the event stream got no answer (status line and headers) within ${STREAM_ANSWER_MS / 1000} s: is a proxy buffering it?`;
        rememberUnanswered(why);
        throw new Error(why);
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
  let response: Response;
  try {
    response = await pacedFetch(authorization ?? '', send);
  } catch (error) {
    if (error instanceof RateLimitBudgetSpent) test.info().skip(true, error.message);
    throw error;
  }
  const headers = Object.fromEntries([...response.headers].map(([name, value]) => [name.toLowerCase(), value]));
  const started = Date.now();
  const read: StreamRead = {
    status: response.status,
    headers,
    text: '',
    body: undefined,
    events: [],
    comments: [],
    openedAt: started,
    eventAtMs: [],
    retries: [],
    stoppedBy: 'ended',
    bytes: 0,
    elapsedMs: 0,
  };
  if (!/^text\/event-stream\b/i.test(headers['content-type'] ?? '')) {
    read.text = await response.text();
    try {
      read.body = JSON.parse(read.text);
    } catch {
      read.body = undefined;
    }
    read.elapsedMs = Date.now() - started;
    return read;
  }

  const reader = response.body!.getReader();
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let block: { id?: string; event?: string; data: string[] } = { data: [] };
  const deadline = setTimeout(() => {
    if (read.stoppedBy === 'ended') read.stoppedBy = 'time';
    controller.abort();
  }, maxMs);
  const stop = (why: StreamRead['stoppedBy']) => {
    read.stoppedBy = why;
    return true;
  };
  /** One line of the SSE format (WHATWG HTML, « Server-sent events »); true when the read should stop. */
  const line = (text: string): boolean => {
    if (text === '') {
      if (block.data.length > 0 || block.id !== undefined || block.event !== undefined) {
        read.events.push({ id: block.id, event: block.event, data: block.data.join('\n') });
        read.eventAtMs.push(Date.now() - started);
      }
      block = { data: [] };
      if (read.events.length >= maxEvents) return stop('events');
      return options.until?.(read) ? stop('until') : false;
    }
    if (text.startsWith(':')) {
      read.comments.push({ text: text.slice(1).trim(), atMs: Date.now() - started });
      return options.until?.(read) ? stop('until') : false;
    }
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    const value = colon < 0 ? '' : text.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') block.id = value;
    else if (field === 'event') block.event = value;
    else if (field === 'data') block.data.push(value);
    else if (field === 'retry') read.retries.push(value);
    return false;
  };
  // What onOpen does runs beside the read; if it fails, the read stops and its error is the answer.
  let openFailed: { error: unknown } | undefined;
  const opened = (async () => {
    try {
      await options.onOpen?.();
      // What it waited for may have come before it finished.
      if (options.until?.(read) && read.stoppedBy === 'ended') {
        read.stoppedBy = 'until';
        controller.abort();
      }
    } catch (error) {
      openFailed = { error };
      controller.abort();
    }
  })();
  try {
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        read.bytes += value.byteLength;
        buffer += decoder.decode(value, { stream: true });
        let end: RegExpExecArray | null;
        while ((end = /\r\n|\n|\r(?!$)/.exec(buffer))) {
          const text = buffer.slice(0, end.index);
          buffer = buffer.slice(end.index + end[0].length);
          if (line(text)) return;
        }
        if (read.bytes >= maxBytes) return void stop('bytes');
      }
    })();
    await reading;
  } catch (error) {
    // The time bound aborts the read: what came until then is the answer.
    if (!openFailed && !((read.stoppedBy === 'time' || read.stoppedBy === 'until') && controller.signal.aborted)) throw error;
  } finally {
    clearTimeout(deadline);
    read.elapsedMs = Date.now() - started;
    controller.abort();
    await reader.cancel().catch(() => undefined);
  }
  await opened;
  if (openFailed) throw openFailed.error;
  return read;
}

/** The envelopes a stream carried, parsed from their `data:`. */
export const streamedEnvelopes = (read: StreamRead) => read.events.map((e) => JSON.parse(e.data));
