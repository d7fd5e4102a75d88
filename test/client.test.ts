/**
 * The typed client (client/, @event-feed/client) against the real server: paging, checkpoints and
 * resuming, following the head (long-poll, and the fallback for a server that does not hold),
 * de-duplication and retries through a proxy that repeats events and answers 429 and 503, typed
 * errors, list_events' auto-paging, and webhook verification of a real delivery.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  createClient,
  EventFeedError,
  ForbiddenError,
  InvalidArgumentError,
  UnauthorizedError,
  unwrap,
  verifyWebhook,
  WebhookVerificationError,
  type EventEnvelope,
} from '../client/src/index.ts';
import { RecentIds } from '../client/src/dedupe.ts';
import { parseRetryAfter } from '../client/src/errors.ts';
import { retryDelay } from '../client/src/retry.ts';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds, sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor } from './support/webhook-receiver.ts';

const EVENTS = 1200;
const MAILBOXES = ['mbx_ventes', 'mbx_support', 'mbx_compta'];

/** `count` events published in one transaction (fast), in this order. */
async function seed(server: TestServer, workspace: string, count: number, from = 0): Promise<void> {
  const events = Array.from({ length: count }, (_, i) => sampleEvent(MAILBOXES[(from + i) % MAILBOXES.length], from + i));
  await server.db.transaction((trx) => publish(trx, workspace, events));
}

/** The feed read by hand, pages of 500: every event id in order and every next_cursor. */
async function readByHand(server: TestServer, key: string): Promise<{ ids: string[]; cursors: string[] }> {
  const ids: string[] = [];
  const cursors: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await server.post('/v1/event_feed', { after, limit: 500 }, key);
    assert.equal(page.status, 200, page.text);
    if (page.json.next_cursor === after) return { ids, cursors };
    ids.push(...page.json.events.map((e: EventEnvelope) => e.id));
    cursors.push(page.json.next_cursor);
    after = page.json.next_cursor;
  }
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

const emit = (server: TestServer, key: string, n: number) => server.post('/v1/emit_event', sampleEvent('mbx_ventes', n), key);

interface ProxyOptions {
  /** What the n-th event_feed request (1-based) meets instead of the server, if anything. */
  fault?: (n: number) => { status: 429; retryAfter: string } | { status: 503 } | undefined;
  /** Serve again the previous page's last events (all of them every 5th time) before each page's own, and its first after them. */
  duplicate?: boolean;
  /** Hold an empty `Prefer: wait=N` poll (re-asking the server) and answer it with Preference-Applied: a long-polling server. */
  hold?: boolean;
  /** Drop Preference-Applied from the answers: a server that does not long-poll. */
  stripPreferenceApplied?: boolean;
}

/** An HTTP proxy in front of the test server that misbehaves as told, and records what it was asked. */
async function startProxy(upstream: string, options: ProxyOptions) {
  const feedRequests: Array<{ prefer: string | undefined; status: number; at: number }> = [];
  let previous: { events: EventEnvelope[]; next_cursor: string } | undefined;
  const read = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };
  const server: Server = createServer((req, res) => {
    let gone = false;
    res.on('close', () => void (gone = true));
    handle(req, res, () => gone).catch((error: Error) => {
      if (!res.headersSent && !gone) res.writeHead(502).end(String(error));
      else res.destroy();
    });
  });
  async function handle(req: IncomingMessage, res: ServerResponse, isGone: () => boolean): Promise<void> {
    const body = await read(req);
    const forward = (extra: Record<string, string> = {}) =>
      fetch(upstream + req.url, {
        method: req.method,
        headers: {
          ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
          ...(req.headers['content-type'] ? { 'content-type': req.headers['content-type'] } : {}),
          ...extra,
        },
        body: req.method === 'POST' ? body : undefined,
      });
    if (req.url !== '/v1/event_feed') {
      const answer = await forward();
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text());
      return;
    }
    const n = feedRequests.length + 1;
    const prefer = [req.headers.prefer].flat()[0];
    const fault = options.fault?.(n);
    feedRequests.push({ prefer, status: fault?.status ?? 200, at: Date.now() });
    if (fault?.status === 429) {
      res
        .writeHead(429, { 'content-type': 'application/json', 'retry-after': fault.retryAfter })
        .end(JSON.stringify({ error: { code: 'rate_limited', message: 'slow down' } }));
      return;
    }
    if (fault?.status === 503) {
      res.writeHead(503, { 'content-type': 'text/html' }).end('<h1>503 Service Unavailable</h1>');
      return;
    }
    const wait = Number(/wait=(\d+)/.exec(prefer ?? '')?.[1] ?? 0);
    const after = (JSON.parse(body || '{}') as { after?: string }).after;
    // A holding proxy does the holding itself, and a server that does not long-poll is not asked to.
    let answer = await forward(options.hold || options.stripPreferenceApplied || !prefer ? {} : { prefer });
    let text = await answer.text();
    let held = false;
    if (options.hold && wait > 0 && answer.status === 200) {
      const deadline = Date.now() + wait * 1000;
      while (JSON.parse(text).next_cursor === after && Date.now() < deadline && !isGone()) {
        held = true;
        await new Promise((r) => setTimeout(r, 50));
        answer = await forward();
        text = await answer.text();
      }
    }
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const applied = held ? `wait=${wait}` : answer.headers.get('preference-applied');
    if (applied && !options.stripPreferenceApplied) headers['preference-applied'] = applied;
    if (answer.status === 200 && options.duplicate) {
      const page = JSON.parse(text) as { events: EventEnvelope[]; next_cursor: string };
      // Before each page (an empty one at the head too): the previous page's last 3 events, or all of
      // it every 5th request; and the page's first event once more at its end.
      const repeated = previous ? previous.events.slice(n % 5 === 0 ? 0 : -3) : [];
      text = JSON.stringify({ events: [...repeated, ...page.events, ...page.events.slice(0, 1)], next_cursor: page.next_cursor });
      if (page.events.length > 0) previous = page;
    }
    res.writeHead(answer.status, headers).end(text);
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    feedRequests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("the client's mechanisms", () => {
  it('remembers the last N ids: a repeat inside the window is dropped, one older than it passes', () => {
    const ids = new RecentIds(3);
    assert.deepEqual(
      ['a', 'b', 'a', 'c', 'd', 'b', 'a', 'd'].map((id) => ids.add(id)),
      [true, true, false, true, true, false, true, false],
    );
    const none = new RecentIds(0);
    assert.deepEqual(
      ['a', 'a'].map((id) => none.add(id)),
      [true, true],
    );
    assert.throws(() => new RecentIds(-1), RangeError);
  });

  it('waits what Retry-After says (seconds or an HTTP date), else a capped exponential with full jitter', () => {
    const now = Date.parse('2026-11-25T10:00:00Z');
    assert.equal(parseRetryAfter('7', now), 7);
    assert.equal(parseRetryAfter('Wed, 25 Nov 2026 10:00:30 GMT', now), 30);
    assert.equal(parseRetryAfter('Wed, 25 Nov 2026 09:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter(null), undefined);
    assert.equal(parseRetryAfter('soon'), undefined);
    const limited = new EventFeedError({ code: 'rate_limited', status: 429, message: '', retryAfter: 2 });
    assert.equal(retryDelay(limited, 1, {}), 2000);
    assert.equal(
      retryDelay(new EventFeedError({ code: 'rate_limited', status: 429, message: '', retryAfter: 3600 }), 1, {}),
      300_000,
      'capped at maxRetryAfterMs',
    );
    const failed = new EventFeedError({ code: 'internal', status: 503, message: '' });
    const options = { baseDelayMs: 100, maxDelayMs: 1000 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 10].map((attempt) => retryDelay(failed, attempt, options, () => 0.999)),
      [99, 199, 399, 799, 999, 999],
    );
    assert.equal(
      retryDelay(failed, 3, options, () => 0),
      0,
    );
  });
});

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`the client pages the feed on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let readKey: string;
    let expected: { ids: string[]; cursors: string[] };

    before(async () => {
      server = await startTestServer(await create());
      const workspace = await server.workspace();
      readKey = (await server.key(workspace, ['read'])).key;
      await seed(server, workspace, EVENTS);
      expected = await readByHand(server, readKey);
      assert.equal(expected.ids.length, EVENTS);
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    it(`yields all ${EVENTS} events in order, in pages of 500, and ends once caught up; each checkpoint is the page's next_cursor`, async () => {
      const client = createClient({ baseUrl: server.url, apiKey: readKey });
      const checkpoints: string[] = [];
      const seenAtCheckpoint: number[] = [];
      const ids: string[] = [];
      for await (const event of client.events({
        onCheckpoint: (cursor) => void (checkpoints.push(cursor), seenAtCheckpoint.push(ids.length)),
      }))
        ids.push(event.id);
      assert.deepEqual(ids, expected.ids);
      assert.deepEqual(checkpoints, expected.cursors);
      // A checkpoint comes once the loop body has finished with every event of its page.
      assert.deepEqual(seenAtCheckpoint, [500, 1000, 1200]);
    });

    it('resumes from a stored checkpoint with no gap and no repeat', async () => {
      const client = createClient({ baseUrl: server.url, apiKey: readKey });
      // A consumer that stops in the middle of the third page, having stored each checkpoint.
      let stored: string | undefined;
      const processed: string[] = [];
      for await (const event of client.events({ onCheckpoint: (cursor) => void (stored = cursor) })) {
        processed.push(event.id);
        if (processed.length === 1100) break;
      }
      assert.equal(stored, expected.cursors[1], 'the last checkpoint is the one after the second page');
      // What it had committed: the events up to its checkpoint. Resuming from it gives the rest, once each.
      const committed = processed.slice(0, 1000);
      const resumed = (await collect(client.events({ after: stored }))).map((e) => e.id);
      assert.deepEqual([...committed, ...resumed], expected.ids);
      // And from the head: nothing, and no checkpoint (the cursor does not move).
      const atHead: string[] = [];
      assert.deepEqual(await collect(client.events({ after: expected.cursors.at(-1), onCheckpoint: (c) => void atHead.push(c) })), []);
      assert.deepEqual(atHead, []);
    });
  });
}

describe('the client on SQLite', () => {
  let server: TestServer;
  let workspace: string;
  let readKey: string;
  let writeKey: string;
  let expected: { ids: string[]; cursors: string[] };

  before(async () => {
    server = await startTestServer(await sqliteDatabase(), { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '50' });
    workspace = await server.workspace();
    readKey = (await server.key(workspace, ['read'])).key;
    writeKey = (await server.key(workspace, ['read', 'write'])).key;
    await seed(server, workspace, EVENTS);
    expected = await readByHand(server, readKey);
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
  });

  /** The head's cursor now, and the ids after `from` (for tests that emit more). */
  const head = async () => (await readByHand(server, readKey)).cursors.at(-1)!;

  it('through a proxy that repeats events and answers 429 (Retry-After) and 503: each event once, in order', async () => {
    const proxy = await startProxy(server.url, {
      duplicate: true,
      // Of every 4 requests: one 429 (the first asks for 1 s, the others for 0), one 503.
      fault: (n) => (n % 4 === 1 ? { status: 429, retryAfter: n === 1 ? '1' : '0' } : n % 4 === 3 ? { status: 503 } : undefined),
    });
    try {
      const retries: number[] = [];
      const client = createClient({
        baseUrl: proxy.url,
        apiKey: readKey,
        retry: { baseDelayMs: 20, onRetry: ({ delayMs }) => void retries.push(delayMs) },
      });
      const checkpoints: string[] = [];
      const started = Date.now();
      const ids = (await collect(client.events({ limit: 100, onCheckpoint: (c) => void checkpoints.push(c) }))).map((e) => e.id);
      assert.deepEqual(ids, expected.ids, 'every event exactly once, in the feed order');
      assert.equal(new Set(checkpoints).size, checkpoints.length, 'a checkpoint only when the cursor moved');
      assert.equal(checkpoints.at(-1), expected.cursors.at(-1));
      const statuses = proxy.feedRequests.map((r) => r.status);
      assert.ok(statuses.filter((s) => s === 429).length >= 5 && statuses.filter((s) => s === 503).length >= 5, statuses.join(','));
      assert.equal(retries[0], 1000, 'the first wait is the Retry-After of the first 429');
      assert.ok(Date.now() - started >= 1000);
      assert.ok(retries.slice(1).every((ms) => ms <= 30_000));
    } finally {
      await proxy.close();
    }
  });

  it('follows the head: an event emitted later comes, once, through the duplicating proxy', async () => {
    const proxy = await startProxy(server.url, { duplicate: true, fault: (n) => (n === 3 ? { status: 503 } : undefined) });
    try {
      const client = createClient({ baseUrl: proxy.url, apiKey: readKey, retry: { baseDelayMs: 20 } });
      const stop = new AbortController();
      const got: EventEnvelope[] = [];
      const following = (async () => {
        for await (const event of client.events({
          after: await head(),
          follow: true,
          signal: stop.signal,
          pollIntervalMs: 50,
          waitSeconds: 2,
        })) {
          got.push(event);
          if (got.length === 2) stop.abort();
        }
      })();
      await new Promise((r) => setTimeout(r, 300));
      const first = await emit(server, writeKey, 9001);
      await waitFor(() => got.length === 1, 5000, 'the first event emitted later');
      const second = await emit(server, writeKey, 9002);
      await following;
      assert.deepEqual(
        got.map((e) => e.id),
        [first.json.event.id, second.json.event.id],
      );
      assert.deepEqual(got[0], first.json.event);
      // Each poll asked the server to hold it.
      assert.ok(
        proxy.feedRequests.every((r) => r.prefer === 'wait=2'),
        JSON.stringify(proxy.feedRequests.slice(0, 3)),
      );
    } finally {
      await proxy.close();
    }
  });

  it('at the head, a held poll (Preference-Applied) is asked again at once; an answer without it waits pollIntervalMs', async () => {
    const holding = await startProxy(server.url, { hold: true });
    const plain = await startProxy(server.url, { stripPreferenceApplied: true });
    try {
      const from = await head();
      // Long-polling server: with a poll interval of a minute the event still comes at once.
      const stop = new AbortController();
      const client = createClient({ baseUrl: holding.url, apiKey: readKey });
      const events = client
        .events({ after: from, follow: true, signal: stop.signal, waitSeconds: 1, pollIntervalMs: 60_000 })
        [Symbol.asyncIterator]();
      const next = events.next();
      await new Promise((r) => setTimeout(r, 1500)); // one held poll ran out (1 s), the next is held
      const emitted = await emit(server, writeKey, 9100);
      const started = Date.now();
      const got = await next;
      assert.equal(got.value?.id, emitted.json.event.id);
      assert.ok(Date.now() - started < 2000, 'woken by the event, not by the poll interval');
      assert.ok(holding.feedRequests.length >= 2 && holding.feedRequests.length <= 4, `${holding.feedRequests.length} polls`);
      stop.abort();
      assert.deepEqual(await events.next(), { value: undefined, done: true });

      // A server that answers at once without Preference-Applied: one poll per pollIntervalMs, not a busy loop.
      const stopPlain = new AbortController();
      const plainClient = createClient({ baseUrl: plain.url, apiKey: readKey });
      const after = await head();
      const done = collect(plainClient.events({ after, follow: true, signal: stopPlain.signal, pollIntervalMs: 300 }));
      await new Promise((r) => setTimeout(r, 1000));
      stopPlain.abort();
      assert.deepEqual(await done, []);
      assert.ok(plain.feedRequests.length >= 3 && plain.feedRequests.length <= 5, `${plain.feedRequests.length} polls in 1 s at 300 ms`);
    } finally {
      await holding.close();
      await plain.close();
    }
  });

  it('cursorAt: follows from now on the real server, which holds the poll (a poll interval of a minute does not delay the event)', async () => {
    const client = createClient({ baseUrl: server.url, apiKey: readKey });
    const now = await client.cursorAt('now');
    assert.equal(now, await head());
    assert.equal(await client.cursorAt(), now);
    const stop = new AbortController();
    const events = client
      .events({ after: now, follow: true, signal: stop.signal, waitSeconds: 10, pollIntervalMs: 60_000 })
      [Symbol.asyncIterator]();
    const next = events.next();
    await new Promise((r) => setTimeout(r, 300));
    const emitted = await emit(server, writeKey, 9400);
    const started = Date.now();
    assert.equal((await next).value?.id, emitted.json.event.id);
    assert.ok(Date.now() - started < 2000);
    stop.abort();
    assert.equal((await events.next()).done, true);

    // A time: from the first event stored at or after it (here, all of them); a future one is the head.
    const all = (await collect(client.events({ after: await client.cursorAt(new Date(Date.now() - 3600_000)) }))).map((e) => e.id);
    assert.deepEqual(all, (await readByHand(server, readKey)).ids);
    assert.equal(await client.cursorAt(new Date(Date.now() + 3600_000)), await head());
    await assert.rejects(client.cursorAt('yesterday'), InvalidArgumentError);
  });

  it('aborting the signal ends the iteration at once, even in the middle of a long-poll', async () => {
    const holding = await startProxy(server.url, { hold: true });
    try {
      const client = createClient({ baseUrl: holding.url, apiKey: readKey });
      const stop = new AbortController();
      const iteration = collect(client.events({ after: await head(), follow: true, signal: stop.signal, waitSeconds: 30 }));
      await new Promise((r) => setTimeout(r, 300));
      const started = Date.now();
      stop.abort();
      assert.deepEqual(await iteration, []);
      assert.ok(Date.now() - started < 500, 'no wait for the held poll to end');
      // An already aborted signal: nothing is asked.
      const before = holding.feedRequests.length;
      assert.deepEqual(await collect(client.events({ signal: AbortSignal.abort() })), []);
      assert.equal(holding.feedRequests.length, before);
    } finally {
      await holding.close();
    }
  });

  it('throws typed errors, never retrying 400, 401 or 403', async () => {
    const proxy = await startProxy(server.url, {});
    try {
      const bad = createClient({ baseUrl: proxy.url, apiKey: 'efk_not_a_key' });
      const refused = await collect(bad.events()).then(
        () => assert.fail('a bad key was accepted'),
        (error: unknown) => error,
      );
      assert.ok(refused instanceof UnauthorizedError && refused instanceof EventFeedError);
      assert.equal(refused.code, 'unauthorized');
      assert.equal(refused.status, 401);
      assert.equal(refused.retryable, false);
      assert.equal(proxy.feedRequests.length, 1, 'not retried');

      const client = createClient({ baseUrl: proxy.url, apiKey: readKey });
      await assert.rejects(
        collect(client.events({ after: 'not-a-cursor' })),
        (error: unknown) =>
          error instanceof InvalidArgumentError && error.code === 'invalid_argument' && error.status === 400 && /after/.test(error.message),
      );
      await assert.rejects(collect(client.events({ limit: 501 })), InvalidArgumentError);
      const writeOnly = createClient({ baseUrl: server.url, apiKey: (await server.key(workspace, ['write'])).key });
      await assert.rejects(
        collect(writeOnly.events()),
        (error: unknown) => error instanceof ForbiddenError && error.code === 'forbidden' && error.status === 403,
      );
      assert.equal(proxy.feedRequests.length, 3);
      // A 5xx is retried, then thrown typed once the retries are spent (a proxy's HTML 503: code internal).
      const failing = await startProxy(server.url, { fault: () => ({ status: 503 }) });
      try {
        const retried = createClient({ baseUrl: failing.url, apiKey: readKey, retry: { maxRetries: 2, baseDelayMs: 1 } });
        await assert.rejects(
          collect(retried.events()),
          (error: unknown) => error instanceof EventFeedError && error.code === 'internal' && error.status === 503,
        );
        assert.equal(failing.feedRequests.length, 3);
      } finally {
        await failing.close();
      }
    } finally {
      await proxy.close();
    }
  });

  it('reaches the other operations typed through the openapi-fetch client, with unwrap for typed errors', async () => {
    const writer = createClient({ baseUrl: server.url, apiKey: writeKey });
    const emitted = unwrap(await writer.api.POST('/v1/emit_event', { body: sampleEvent('mbx_support', 9200) }));
    assert.match(emitted.event.id, /^evt_/);
    const version = unwrap(await writer.api.GET('/version'));
    assert.equal(version.service, 'event-feed');
    const reader = createClient({ baseUrl: server.url, apiKey: readKey });
    assert.throws(
      () => unwrap({ error: { error: { code: 'forbidden', message: 'no' } }, response: new Response(null, { status: 403 }) }),
      ForbiddenError,
    );
    await assert.rejects(
      async () => unwrap(await reader.api.POST('/v1/emit_event', { body: sampleEvent('mbx_support', 9201) })),
      ForbiddenError,
    );
    const page = await reader.feedPage({ limit: 2 });
    assert.deepEqual(
      page.events.map((e) => e.id),
      expected.ids.slice(0, 2),
    );
  });

  it('lists events through every page of list_events, newest first, with filters', async () => {
    const client = createClient({ baseUrl: server.url, apiKey: readKey });
    const all = (await collect(client.listEvents({ limit: 500 }))).map((e) => e.id);
    const fed = (await readByHand(server, readKey)).ids;
    assert.deepEqual(all, [...fed].reverse());
    const ventes = await collect(client.listEvents({ mailbox_ids: ['mbx_ventes'], limit: 100 }));
    assert.ok(ventes.length > 400);
    assert.ok(ventes.every((e) => e.subject.refs.mailbox_id === 'mbx_ventes'));
    const first = await client.listEventsPage({ limit: 10 });
    assert.equal(first.events.length, 10);
    assert.equal(typeof first.next_page_token, 'string');
    const second = await client.listEventsPage({ limit: 10, page_token: first.next_page_token! });
    assert.deepEqual(
      [...first.events, ...second.events].map((e) => e.id),
      all.slice(0, 20),
    );
    // Starting from a page token continues from there.
    assert.deepEqual(
      (await collect(client.listEvents({ limit: 7, page_token: first.next_page_token! }))).map((e) => e.id),
      all.slice(10),
    );
  });

  it('verifies a real webhook delivery with the endpoint secret, and refuses a tampered one', async () => {
    const receiver = await startReceiver();
    try {
      const admin = createClient({ baseUrl: server.url, apiKey: (await server.key(workspace, ['read', 'write', 'admin'])).key });
      const { endpoint } = unwrap(await admin.api.POST('/v1/set_webhook', { body: { url: receiver.url, event_types: ['mail.*'] } }));
      const secret = endpoint.secret!;
      assert.match(secret, /^whsec_/);
      const emitted = (await emit(server, writeKey, 9300)).json.event as EventEnvelope;
      await waitFor(() => receiver.received.length > 0, 10_000, 'a delivery');
      const delivery = receiver.received[0]!;
      // Node's req.headers, a fetch Headers, a Buffer or a string: all verify.
      assert.deepEqual(verifyWebhook(delivery.body, delivery.headers, secret), emitted);
      const headers = new Headers(Object.entries(delivery.headers).map(([k, v]): [string, string] => [k, String(v)]));
      assert.deepEqual(admin.verifyWebhook(Buffer.from(delivery.body), headers, secret), emitted);

      const refused = (payload: string, hdrs: Record<string, unknown>, key = secret) =>
        assert.throws(() => verifyWebhook(payload, hdrs as Record<string, string>, key), WebhookVerificationError);
      refused(delivery.body.replace('"mail.received"', '"mail.sent"'), delivery.headers);
      refused(delivery.body, delivery.headers, `whsec_${Buffer.from('another secret, 32 bytes long!!!').toString('base64')}`);
      refused(delivery.body, { ...delivery.headers, 'webhook-signature': undefined });
      refused(delivery.body, { ...delivery.headers, 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 3600) });
    } finally {
      await receiver.close();
    }
  });
});
