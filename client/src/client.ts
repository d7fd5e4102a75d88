import createFetchClient, { type Client } from 'openapi-fetch';
import { RecentIds } from './dedupe.js';
import { errorOfResponse } from './errors.js';
import type { components, paths } from './generated/api.js';
import { sleep, withRetry, type RetryOptions } from './retry.js';
import { verifyWebhook, type WebhookHeaders, type WebhookPayload } from './webhooks.js';

type Schemas = components['schemas'];
/** An event as stored: what the feed, list_events and webhooks give. */
export type EventEnvelope = Schemas['EventEnvelope'];
export type EventFeedResponse = Schemas['EventFeedResponse'];
export type ListEventsRequest = Schemas['ListEventsRequest'];
export type ListEventsResponse = Schemas['ListEventsResponse'];
export type FeedCursorResponse = Schemas['FeedCursorResponse'];
/** The openapi-fetch client over the contract's paths: every operation, typed, its JSON answers (not the feed's text/event-stream). */
export type ApiClient = Client<paths, 'application/json'>;
/** Where `cursorAt` puts the cursor: `'now'` (the head), or a time (a Date, or an RFC 3339 string). */
export type CursorAt = 'now' | Date | NonNullable<Schemas['FeedCursorRequest']['at']>;

export interface ClientOptions {
  /** The deployment's address, e.g. `http://127.0.0.1:3000` (no `/v1`). */
  baseUrl: string;
  /** An API key (`efk_…`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** A fetch of your own (a proxy agent, a test double). Default: the global fetch. */
  fetch?: (input: Request) => Promise<Response>;
  /** Retries of the read helpers (events, listEvents, listEventsPage, cursorAt): see RetryOptions. */
  retry?: RetryOptions;
  /** How long a request may take before it is abandoned and retried, in ms (default 30,000), on top of a long-poll's wait. */
  requestTimeoutMs?: number;
}

export interface EventsOptions {
  /** The cursor to read after (a `next_cursor`, or a checkpoint you stored). Default: the oldest retained event. */
  after?: string;
  /** Keep reading at the head: long-poll for new events instead of ending once caught up. */
  follow?: boolean;
  /** Aborting ends the iteration cleanly (an in-flight long-poll is aborted; the loop just ends). */
  signal?: AbortSignal;
  /**
   * Called with the new cursor after every event of a page has been handed to you (your loop body
   * has finished with the last one), and only when the cursor moved. Store it; pass it as `after`
   * to resume: no event is skipped. Awaited: an async store is waited for before the next page.
   */
  onCheckpoint?: (cursor: string) => void | Promise<void>;
  /** Events per page, 1..500 (default 500). */
  limit?: number;
  /** With `follow`: the `Prefer: wait=N` of each poll, in seconds (default 25; the server caps it, at 60). 0 turns long-polling off. */
  waitSeconds?: number;
  /** With `follow`, against a server that did not hold the poll (no `Preference-Applied`): the pause between polls, in ms (default 1,000). */
  pollIntervalMs?: number;
  /** How many recent ids to remember to drop an event the feed serves again (default 10,000; 0: none). */
  dedupeWindow?: number;
  /** Overrides the client's retry options for this iteration. */
  retry?: RetryOptions;
}

export interface RequestOptions {
  signal?: AbortSignal;
  retry?: RetryOptions;
}

export interface EventFeedClient {
  /** The openapi-fetch client, authenticated: every operation of the contract (`api.POST('/v1/emit_event', { body })`), answers as `{ data, error, response }`. */
  readonly api: ApiClient;
  /** The events after a cursor, oldest first, each once; with `follow`, forever (until `signal` aborts). */
  events(options?: EventsOptions): AsyncGenerator<EventEnvelope, void, undefined>;
  /** Every event list_events matches, newest first, through all its pages (`next_page_token`). */
  listEvents(params?: ListEventsRequest, options?: RequestOptions): AsyncGenerator<EventEnvelope, void, undefined>;
  /**
   * The cursor to pass as `after` (feed_cursor): for `'now'` (default), only events emitted from
   * now on; for a time, from the first event stored at or after it. A time older than the retained
   * events is refused (InvalidArgumentError).
   */
  cursorAt(at?: CursorAt, options?: RequestOptions): Promise<string>;
  /** One page of list_events. */
  listEventsPage(params?: ListEventsRequest, options?: RequestOptions): Promise<ListEventsResponse>;
  /** One page of event_feed (no retry, no de-duplication): `{ events, next_cursor }`. */
  feedPage(params?: { after?: string; limit?: number }, options?: { signal?: AbortSignal }): Promise<EventFeedResponse>;
  /** The same as the module's `verifyWebhook`. */
  verifyWebhook(payload: WebhookPayload, headers: WebhookHeaders, secret: string): EventEnvelope;
}

/** An openapi-fetch result: the data, or throws the typed error (EventFeedError and its subclasses). */
export function unwrap<D>(result: { data?: D; error?: unknown; response: Response }): D {
  if (!result.response.ok) throw errorOfResponse(result.response, result.error);
  return result.data as D;
}

/** A signal that aborts with the caller's, or after `ms` with a TimeoutError (retried). */
function timed(signal: AbortSignal | undefined, ms: number): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms);
  const onAbort = () => controller.abort(signal!.reason);
  if (signal?.aborted) controller.abort(signal.reason);
  else signal?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}

/** Whether the server held the poll (RFC 7240 `Preference-Applied: wait=N`). */
const heldPoll = (response: Response) => /(^|[\s,;])wait\b/i.test(response.headers.get('preference-applied') ?? '');

export function createClient(options: ClientOptions): EventFeedClient {
  const { apiKey, requestTimeoutMs = 30_000 } = options;
  const clientRetry = options.retry ?? {};
  const api = createFetchClient<paths, 'application/json'>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { Authorization: `Bearer ${apiKey}` },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });

  async function feedPageWith(
    after: string | undefined,
    limit: number | undefined,
    waitSeconds: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    const deadline = timed(signal, requestTimeoutMs + (waitSeconds ?? 0) * 1000);
    try {
      const result = await api.POST('/v1/event_feed', {
        body: { after, limit },
        params: waitSeconds ? { header: { Prefer: `wait=${waitSeconds}` } } : {},
        signal: deadline.signal,
      });
      return { page: unwrap(result), held: heldPoll(result.response) };
    } finally {
      deadline.done();
    }
  }

  /** A read, retried (it has no side effects), each attempt within the request timeout. */
  function read<D>(
    call: (signal: AbortSignal) => Promise<{ data?: D; error?: unknown; response: Response }>,
    requestOptions: RequestOptions,
  ): Promise<D> {
    const { signal } = requestOptions;
    return withRetry(
      async () => {
        const deadline = timed(signal, requestTimeoutMs);
        try {
          return unwrap(await call(deadline.signal));
        } finally {
          deadline.done();
        }
      },
      { ...clientRetry, ...requestOptions.retry },
      signal,
    );
  }

  const listEventsPage = (params: ListEventsRequest = {}, requestOptions: RequestOptions = {}): Promise<ListEventsResponse> =>
    read((signal) => api.POST('/v1/list_events', { body: params, signal }), requestOptions);

  const cursorAt = async (at: CursorAt = 'now', requestOptions: RequestOptions = {}): Promise<string> =>
    (
      await read(
        (signal) => api.POST('/v1/feed_cursor', { body: { at: at instanceof Date ? at.toISOString() : at }, signal }),
        requestOptions,
      )
    ).cursor;

  async function* events(eventsOptions: EventsOptions = {}): AsyncGenerator<EventEnvelope, void, undefined> {
    const {
      follow = false,
      signal,
      onCheckpoint,
      limit = 500,
      waitSeconds = 25,
      pollIntervalMs = 1000,
      dedupeWindow = 10_000,
    } = eventsOptions;
    const retry = { ...clientRetry, ...eventsOptions.retry };
    const seen = new RecentIds(dedupeWindow);
    let cursor = eventsOptions.after;
    try {
      while (!signal?.aborted) {
        // Sent on every poll when following: the server holds a request only when nothing is new.
        const wait = follow && waitSeconds > 0 ? waitSeconds : undefined;
        const { page, held } = await withRetry(() => feedPageWith(cursor, limit, wait, signal), retry, signal);
        let fresh = 0;
        for (const event of page.events) {
          if (!seen.add(event.id)) continue;
          fresh++;
          yield event;
          if (signal?.aborted) return;
        }
        if (page.next_cursor !== cursor) {
          cursor = page.next_cursor;
          await onCheckpoint?.(cursor);
          continue;
        }
        // The cursor did not move: caught up, whatever repeats came with it. (New events under an
        // unchanged cursor break the contract: read on rather than risk stopping short.)
        if (fresh > 0) continue;
        if (!follow) return;
        // A server that does not long-poll answered at once: pause before polling again.
        if (!held) await sleep(pollIntervalMs, signal);
      }
    } catch (error) {
      if (signal?.aborted) return;
      throw error;
    }
  }

  async function* listEvents(
    params: ListEventsRequest = {},
    requestOptions: RequestOptions = {},
  ): AsyncGenerator<EventEnvelope, void, undefined> {
    let pageToken = params.page_token;
    do {
      const page = await listEventsPage({ ...params, page_token: pageToken }, requestOptions);
      yield* page.events;
      pageToken = page.next_page_token ?? undefined;
    } while (pageToken !== undefined);
  }

  return {
    api,
    events,
    listEvents,
    listEventsPage,
    cursorAt,
    feedPage: async ({ after, limit } = {}, { signal } = {}) => (await feedPageWith(after, limit, undefined, signal)).page,
    verifyWebhook,
  };
}
