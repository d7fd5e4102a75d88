import type { APIRequestContext } from '@playwright/test';
import { expect, test } from '../support/test.ts';
import { WRITES } from '../support/writes.ts';
import { emit, env, feed, feedCursor, missing, readFeed, toAddEvents, writesRefused, type Envelope } from '../support/deployment.ts';
import { seeded } from '../support/seed.ts';
import { readStream, streamedEnvelopes, type StreamRead } from '../support/stream.ts';
import { totalWaitedMs } from '../support/rate-limits.ts';

/** How many events of the feed the stream checks compare (the stream is closed after them). */
const WINDOW = 300;

const expectStream = (read: StreamRead) => {
  expect(read.status, `the stream's status: ${read.text.slice(0, 200)}`).toBe(200);
  expect(read.headers['content-type'] ?? '', 'content type').toMatch(/^text\/event-stream/i);
};

/**
 * The stream stopped before it brought what was expected. A deployment pauses a stream while its
 * key is over its rate: when the key is rate limited now, the check is not run (skipped), else
 * the stream was too slow or short, a failure.
 */
async function expectEnough(request: APIRequestContext, key: string, read: StreamRead, wanted: number, what: string) {
  if (read.events.length >= wanted) return;
  const waited = totalWaitedMs();
  const probe = await feedCursor(request, key, {});
  const limited = totalWaitedMs() > waited || probe.headers['ratelimit-remaining'] === '0';
  test.skip(
    limited,
    `the stream brought ${read.events.length} of ${wanted} events in ${(read.elapsedMs / 1000).toFixed(1)} s and the key is rate limited (a stream is paused while its key is over its rate): check not run`,
  );
  expect(
    read.events.length,
    `${what}: events the stream brought in ${(read.elapsedMs / 1000).toFixed(1)} s (stopped by ${read.stoppedBy})`,
  ).toBeGreaterThanOrEqual(wanted);
}

/** The stream's events against the JSON pages': same envelopes, unnamed messages (no `event:`: EventSource's onmessage gets each), each `id` present. */
function expectSameEvents(read: StreamRead, events: Envelope[], what: string) {
  const streamed = streamedEnvelopes(read).slice(0, events.length);
  expect(
    streamed.map((e) => e.id),
    `${what}: ids`,
  ).toEqual(events.map((e) => e.id));
  expect(streamed, `${what}: envelopes`).toEqual(events);
  expect(
    read.events.slice(0, events.length).map((e) => e.event),
    `${what}: each event is an unnamed message (no event: line)`,
  ).toEqual(events.map(() => undefined));
  const withoutId = read.events.slice(0, events.length).filter((e) => !e.id).length;
  expect(withoutId, `${what}: SSE events without id:`).toBe(0);
}

/** A few positions of a window to try cursors at: the first, the last, and some between. */
const samples = (length: number) =>
  [...new Set([0, 1, Math.floor(length / 3), Math.floor((2 * length) / 3), length - 2, length - 1])].filter((i) => i >= 0 && i < length);

test.describe('event stream', () => {
  test.beforeAll(seeded);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every event stream check'));

  test("the stream's events are the JSON pages' events, and each id is the cursor after its event", async ({ request }) => {
    const json = await readFeed(request, env.key!, 500, { max: WINDOW });
    const events = json.events.slice(0, WINDOW);
    test.skip(events.length < 2, `the feed holds fewer than 2 events ${toAddEvents}: nothing to stream`);
    const read = await readStream(env.key, { body: { limit: 500 }, maxEvents: events.length });
    expectStream(read);
    await expectEnough(request, env.key!, read, events.length, 'from the start');
    expectSameEvents(read, events, 'the stream from the start');
    // An id is a cursor: event_feed after it starts with the next event, and it is the next_cursor
    // of a page ending with that event (cursors are stable: one position, one string).
    for (const i of samples(events.length - 1)) {
      const next = await feed(request, env.key, { after: read.events[i]!.id, limit: 1 });
      expect(next.status, `event_feed after the id of event ${i + 1}: ${next.text.slice(0, 200)}`).toBe(200);
      expect(next.body.events[0]?.id, `event_feed after the id of event ${i + 1}`).toBe(events[i + 1]!.id);
    }
    const page = await feed(request, env.key, { limit: 7 });
    const n = page.body.events.length;
    expect(page.body.next_cursor, `next_cursor of a page of ${n} is the id of event ${n}`).toBe(read.events[n - 1]!.id);
  });

  test("a stream token opens the same stream with a plain GET (a browser's EventSource), and nothing else", async ({ request }) => {
    const json = await readFeed(request, env.key!, 500, { max: 40 });
    const events = json.events.slice(0, 40);
    test.skip(events.length < 2, `the feed holds fewer than 2 events ${toAddEvents}: nothing to stream`);
    const minted = await request.post('/v1/stream_token', { headers: { authorization: `Bearer ${env.key}` }, data: { ttl_seconds: 60 } });
    expect(minted.status(), `stream_token: ${(await minted.text()).slice(0, 200)}`).toBe(200);
    const { token, stream_url } = (await minted.json()) as { token: string; stream_url: string };
    expect(stream_url, 'stream_url').toBe(`/v1/event_feed/stream?token=${token}`);
    const read = await readStream(env.key, { getPath: `${stream_url}&limit=500`, maxEvents: events.length });
    expectStream(read);
    await expectEnough(request, env.key!, read, events.length, 'the GET stream');
    expectSameEvents(read, events, 'the GET stream');
    const resumed = await readStream(env.key, { getPath: stream_url, headers: { 'last-event-id': read.events[0]!.id! }, maxEvents: 1 });
    expect(streamedEnvelopes(resumed)[0]?.id, 'Last-Event-ID resumes the GET stream after that event').toBe(events[1]!.id);
    const forged = await readStream(undefined, { getPath: `/v1/event_feed/stream?token=${token.slice(0, -4)}AAAA`, maxEvents: 1 });
    expect(forged.status, 'an altered token').toBe(401);
    const asKey = await feed(request, token, {});
    expect(asKey.status, 'a stream token used as an API key').toBe(401);
  });

  test('Last-Event-ID resumes right after that event, in place of after', async ({ request }) => {
    const json = await readFeed(request, env.key!, 500, { max: 40 });
    const events = json.events.slice(0, 40);
    test.skip(events.length < 12, `the feed holds fewer than 12 events ${toAddEvents}: nothing to resume`);
    const first = await readStream(env.key, { body: { limit: 500 }, maxEvents: 5 });
    expectStream(first);
    await expectEnough(request, env.key!, first, 5, 'from the start');
    const lastEventId = first.events[4]!.id!;
    const expected = events.slice(5);
    // As an EventSource reconnects: the same body, with the header; and a body without after.
    for (const body of [{ limit: 500 }, { after: first.events[0]!.id, limit: 500 }]) {
      const resumed = await readStream(env.key, { body, headers: { 'last-event-id': lastEventId }, maxEvents: expected.length });
      expectStream(resumed);
      await expectEnough(request, env.key!, resumed, expected.length, 'resumed');
      expectSameEvents(resumed, expected, `resumed with Last-Event-ID and ${JSON.stringify(Object.keys(body))}`);
    }
  });

  test('a refused call is answered like the JSON call, before the stream starts', async ({ request }) => {
    const cursor = (await feed(request, env.key, { limit: 1 })).body.next_cursor as string;
    const tampered = cursor.slice(0, 10) + (cursor[10] === 'A' ? 'B' : 'A') + cursor.slice(11);
    const cases: Array<{ what: string; key: string | undefined; body: unknown; headers?: Record<string, string>; json: unknown }> = [
      { what: 'a garbage cursor', key: env.key, body: { after: 'garbage' }, json: { after: 'garbage' } },
      { what: 'a tampered cursor', key: env.key, body: { after: tampered }, json: { after: tampered } },
      { what: 'a garbage Last-Event-ID', key: env.key, body: {}, headers: { 'last-event-id': 'garbage' }, json: { after: 'garbage' } },
      { what: 'limit 0', key: env.key, body: { limit: 0 }, json: { limit: 0 } },
      { what: 'an unknown parameter', key: env.key, body: { foo: 1 }, json: { foo: 1 } },
      { what: 'no key', key: undefined, body: {}, json: {} },
      ...(env.noReadKey ? [{ what: 'a key without read', key: env.noReadKey, body: {}, json: {} }] : []),
      ...(env.otherKey
        ? [{ what: "another workspace's cursor", key: env.otherKey, body: { after: cursor }, json: { after: cursor } }]
        : []),
    ];
    for (const { what, key, body, headers, json } of cases) {
      const streamed = await readStream(key, { body, headers, maxEvents: 1, maxMs: 5000 });
      const plain = await feed(request, key, json);
      expect(plain.status, `${what}: the JSON call refuses it`).toBeGreaterThanOrEqual(400);
      expect(streamed.status, `${what}: status`).toBe(plain.status);
      expect(streamed.headers['content-type'] ?? '', `${what}: content type`).toMatch(/^application\/json/i);
      expect(streamed.body, `${what}: body`).toEqual(plain.body);
    }
  });

  test("a restricted key's stream carries only its mailboxes' events, with cursors of its feed", async ({ request }) => {
    test.skip(
      !env.restrictedKey || env.restrictedMailboxes.length === 0,
      missing('EVENT_FEED_RESTRICTED_KEY / EVENT_FEED_RESTRICTED_MAILBOXES', 'the restricted stream check'),
    );
    const json = await readFeed(request, env.restrictedKey!, 500, { max: WINDOW });
    const events = json.events.slice(0, WINDOW);
    test.skip(events.length < 2, `the restricted mailboxes hold fewer than 2 events ${toAddEvents}: nothing to stream`);
    const read = await readStream(env.restrictedKey, { body: { limit: 500 }, maxEvents: events.length });
    expectStream(read);
    await expectEnough(request, env.restrictedKey!, read, events.length, 'the restricted stream');
    const outside = streamedEnvelopes(read).filter((e) => !env.restrictedMailboxes.includes(e.subject?.refs?.mailbox_id ?? ''));
    expect(
      outside.map((e) => `${e.id} (${e.subject?.refs?.mailbox_id ?? 'no mailbox'})`),
      'events outside the mailboxes',
    ).toEqual([]);
    expectSameEvents(read, events, "the restricted key's stream");
    for (const i of samples(events.length - 1).slice(0, 3)) {
      const next = await feed(request, env.restrictedKey, { after: read.events[i]!.id, limit: 1 });
      expect(next.body.events[0]?.id, `the restricted event_feed after the id of event ${i + 1}`).toBe(events[i + 1]!.id);
    }
  });

  test('at the head the stream stays open, with a keep-alive comment at most every 15 s', async ({ request }) => {
    const head = await feedCursor(request, env.key, {});
    expect(head.status).toBe(200);
    // The contract's period is 15 s; a little more for the network.
    // What comes as the stream opens (a first comment, say) proves nothing of the period: wait for what comes after.
    const later = (r: StreamRead) => [...r.comments.map((c) => c.atMs), ...r.eventAtMs].filter((ms) => ms >= 1000);
    const read = await readStream(env.key, { body: { after: head.body.cursor }, maxMs: 20_000, until: (r) => later(r).length > 0 });
    expectStream(read);
    // Another writer's event is as good a sign of life; else a comment, within the period.
    expect(read.stoppedBy, `nothing came on the stream from 1 s to ${(read.elapsedMs / 1000).toFixed(1)} s at the head`).toBe('until');
    expect(Math.min(...later(read)), 'the next keep-alive came after (ms)').toBeLessThanOrEqual(17_000);
  });

  test('a new event reaches a stream open at the head, with the cursor event_feed gives after it', { tag: WRITES }, async ({ request }) => {
    const refused = writesRefused('emitting events');
    test.skip(refused !== undefined, refused);
    const head = await feedCursor(request, env.key, {});
    expect(head.status).toBe(200);
    let fresh: Envelope | undefined;
    let emittedAt = 0;
    const read = await readStream(env.key, {
      body: { after: head.body.cursor },
      maxMs: 15_000,
      onOpen: async () => {
        fresh = await emit(request, env.restrictedMailboxes[0]);
        emittedAt = Date.now();
      },
      until: (r) => fresh !== undefined && r.events.some((e) => e.data.includes(fresh!.id)),
    });
    expectStream(read);
    const envelopes = streamedEnvelopes(read);
    const index = envelopes.findIndex((e) => e.id === fresh?.id);
    expect(index, `the emitted event did not come on the stream within ${(read.elapsedMs / 1000).toFixed(1)} s`).toBeGreaterThanOrEqual(0);
    expect(read.openedAt + read.eventAtMs[index]! - emittedAt, 'from the emit answered to the event on the stream (ms)').toBeLessThan(5000);
    expect(envelopes[index], 'the envelope emit_event answered').toEqual(fresh);
    // Other writers may interleave: the stream from the head is the feed from the head.
    const json = await readFeed(request, env.key!, 500, { after: head.body.cursor, max: index + 1 });
    expect(
      envelopes.slice(0, index + 1).map((e) => e.id),
      'the stream from the head',
    ).toEqual(json.events.slice(0, index + 1).map((e) => e.id));
    const page = await feed(request, env.key, { after: head.body.cursor, limit: index + 1 });
    expect(read.events[index]!.id, 'the id of the new event is the next_cursor of the page ending with it').toBe(page.body.next_cursor);
  });
});
