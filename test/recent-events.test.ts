/**
 * Tailing readers answered from the events this process just committed (feed/recent-events.ts):
 * a page comes from memory only when it is whole, it is byte for byte the page the database gives,
 * and emits interleaved from two instances still reach a tailing reader exactly once, in order.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ChannelTrust } from '../src/changes/channel-trust.ts';
import { FeedHeads } from '../src/feed/heads.ts';
import { RecentEvents, type RecentEvent } from '../src/feed/recent-events.ts';
import { FeedScope } from '../src/feed/scope.ts';
import { PAGE_MAX_BYTES } from '../src/limits/page-bytes.ts';
import { sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer, serverKnex } from './support/server.ts';
import { checkoutsDuring } from './support/checkouts.ts';
import { until } from './support/wait.ts';

const event = (n: number, mailboxId: string | null = 'mbx_a'): RecentEvent => ({
  mailboxId,
  type: 'mail.sent',
  occurredAtMs: n,
  envelope: `{"n":${n}}`,
});
const text = (page: { bytes: Buffer } | undefined) => (page === undefined ? undefined : `[${page.bytes.toString()}]`);

function fixture() {
  let t = 1000;
  const trust = new ChannelTrust();
  const heads = new FeedHeads(trust, { now: () => t });
  trust.open();
  const recent = new RecentEvents(() => t);
  /** The page, if whole by what the heads know (the operation asks them the same after a round trip). */
  const whole = (ws: string, afterSeq: number, limit: number, mailboxes: string[] | null = null) => {
    const found = recent.page(ws, afterSeq, limit, FeedScope.of(mailboxes));
    if (found === undefined) return undefined;
    return found.wholeIfNothingAfter === undefined || heads.nothingAfter(ws, found.wholeIfNothingAfter) ? found.page : undefined;
  };
  return { heads, recent, whole, advance: (ms: number) => (t += ms) };
}

describe('RecentEvents: a page from memory only when it is whole', () => {
  it('a full page needs nothing else; a short one needs the head to be known past the run', () => {
    const { heads, recent, whole } = fixture();
    recent.committed('ws', 11, [event(11), event(12), event(13)]);
    assert.equal(text(whole('ws', 10, 2)), '[{"n":11},{"n":12}]');
    assert.equal(recent.page('ws', 10, 2, FeedScope.WHOLE)?.wholeIfNothingAfter, undefined);
    assert.equal(recent.page('ws', 11, 5, FeedScope.WHOLE)?.wholeIfNothingAfter, 13);
    assert.equal(whole('ws', 11, 5), undefined, 'short, and the head is unknown');
    heads.heard('ws', 14);
    assert.equal(whole('ws', 11, 5), undefined, 'seq 14 is not here');
    recent.committed('ws', 14, [event(14)]);
    const page = whole('ws', 11, 5);
    assert.deepEqual([text(page), page?.count, page?.lastSeq], ['[{"n":12},{"n":13},{"n":14}]', 3, 14]);
  });

  it('a page from memory stops at the byte cap like a read, and is whole there', () => {
    const { recent, whole } = fixture();
    // 200,000 characters of two UTF-8 bytes each: two fit under 1 MiB, not three.
    const wide = (n: number): RecentEvent => ({
      mailboxId: 'mbx_a',
      type: 'mail.sent',
      occurredAtMs: n,
      envelope: `"${'é'.repeat(200_000)}${n}"`,
    });
    recent.committed('ws', 1, [wide(1), wide(2), wide(3)]);
    const found = recent.page('ws', 0, 500, FeedScope.WHOLE)!;
    assert.deepEqual([found.page.count, found.page.lastSeq, found.page.cutAtByteCap, found.wholeIfNothingAfter], [2, 2, true, undefined]);
    assert.ok(found.page.bytes.length <= PAGE_MAX_BYTES);
    assert.equal(whole('ws', 2, 500)?.count, undefined, 'the last one alone is short: whole only once the head is known');
  });

  it('not before the run, nor at or past its end (the heads answer that)', () => {
    const { heads, recent, whole } = fixture();
    recent.committed('ws', 11, [event(11)]);
    heads.heard('ws', 11);
    assert.equal(whole('ws', 9, 5), undefined, 'seq 10 is not here');
    assert.equal(text(whole('ws', 10, 5)), '[{"n":11}]');
    assert.equal(whole('ws', 11, 5), undefined);
    assert.equal(whole('other', 0, 5), undefined);
  });

  it('a gap (another instance committed in between) starts the run again', () => {
    const { heads, recent, whole } = fixture();
    recent.committed('ws', 1, [event(1), event(2)]);
    recent.committed('ws', 4, [event(4)]);
    heads.heard('ws', 4);
    assert.equal(whole('ws', 1, 5), undefined, 'seq 3 was never here');
    assert.equal(whole('ws', 0, 1), undefined, 'forgotten with the old run');
    assert.equal(text(whole('ws', 3, 5)), '[{"n":4}]');
  });

  it("a restricted key gets its mailboxes' events only, and an empty page once the head is known", () => {
    const { heads, recent, whole } = fixture();
    recent.committed('ws', 1, [event(1, 'mbx_a'), event(2, 'mbx_b'), event(3, null), event(4, 'mbx_a'), event(5, 'mbx_b')]);
    assert.equal(text(whole('ws', 0, 2, ['mbx_a'])), '[{"n":1},{"n":4}]', 'full: two of mbx_a');
    assert.equal(whole('ws', 0, 3, ['mbx_a']), undefined, 'short: a third one may be past the run');
    assert.equal(whole('ws', 4, 3, ['mbx_a']), undefined, 'none of its events in the run: one may be past it');
    heads.heard('ws', 5);
    const page = whole('ws', 0, 3, ['mbx_a']);
    assert.deepEqual([text(page), page?.lastSeq], ['[{"n":1},{"n":4}]', 4]);
    assert.deepEqual(whole('ws', 4, 3, ['mbx_a']), { bytes: Buffer.alloc(0), count: 0, lastSeq: undefined, cutAtByteCap: false });
    assert.equal(whole('ws', 4, 3, [])?.count, 0);
  });

  it('keeps 256 events per workspace, 1 Mi characters in all (the least recently appended workspace goes), 60 s each', () => {
    const { recent, whole, advance } = fixture();
    recent.committed(
      'ws',
      1,
      Array.from({ length: 300 }, (_, i) => event(i + 1)),
    );
    assert.equal(whole('ws', 43, 1), undefined);
    assert.equal(text(whole('ws', 44, 1)), '[{"n":45}]');

    const big = (n: number): RecentEvent => ({
      mailboxId: null,
      type: 'mail.sent',
      occurredAtMs: n,
      envelope: `"${'x'.repeat(100_000)}${n}"`,
    });
    recent.committed('old', 1, [big(1)]);
    recent.committed('new', 1, [big(1)]);
    for (let i = 0; i < 9; i++) recent.committed('bulk', i + 1, [big(i + 1)]);
    assert.equal(whole('old', 0, 1), undefined, 'the least recently appended went first');
    assert.equal(whole('new', 0, 1)?.count, 1);
    assert.equal(whole('bulk', 0, 9)?.count, 9);

    advance(60_001);
    assert.equal(whole('bulk', 8, 1), undefined, 'too old');
  });
});

async function post(server: TestServer, path: string, body: unknown, key: string) {
  const response = await server.post(path, body, key);
  assert.equal(response.status, path === '/v1/emit_event' ? 201 : 200, response.text);
  return response;
}

describe('recent events on Postgres', { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' }, () => {
  let database: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  let ws: string;
  let key: string;
  let restricted: string;

  before(async () => {
    database = await postgresDatabase();
    a = await startTestServer(database, { WEBHOOK_DISPATCH_INTERVAL_MS: '60000' });
    b = await startTestServer(database, { WEBHOOK_DISPATCH_INTERVAL_MS: '60000' });
    ws = await a.workspace();
    ({ key } = await a.key(ws, ['read', 'write']));
    ({ key: restricted } = await a.key(ws, ['read'], ['mbx_sales']));
    for (const server of [a, b]) await post(server, '/v1/event_feed', {}, key); // keys verified, channels opening
    await until('channels open', () => a.services.changes.live && b.services.changes.live);
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await database?.drop();
  });

  it('answers polls after its own emits without a statement, byte for byte what the database gives', async () => {
    const start = (await post(a, '/v1/event_feed', {}, key)).json.next_cursor as string;
    const startRestricted = (await post(a, '/v1/event_feed', {}, restricted)).json.next_cursor as string;
    for (let n = 0; n < 6; n++)
      await post(a, '/v1/emit_event', sampleEvent(n % 3 === 0 ? 'mbx_other' : n % 3 === 1 ? 'mbx_sales' : undefined, n), key);
    for (const [reader, after] of [
      [key, start],
      [restricted, startRestricted],
    ] as const) {
      for (const limit of [1, 2, 5, 6, 100]) {
        let cursor = after;
        for (let page = 0; page < 8; page++) {
          let fromMemory = '';
          // b committed none of these events: it reads them from the database.
          const fromDatabase = (await post(b, '/v1/event_feed', { after: cursor, limit }, reader)).text;
          const checkouts = await checkoutsDuring(
            serverKnex(a),
            async () => (fromMemory = (await post(a, '/v1/event_feed', { after: cursor, limit }, reader)).text),
          );
          assert.equal(fromMemory, fromDatabase, `limit ${limit}, page ${page}`);
          assert.equal(checkouts, 0, `limit ${limit}, page ${page}: answered from memory`);
          const next = JSON.parse(fromMemory).next_cursor as string;
          if (next === cursor) break;
          cursor = next;
        }
      }
    }
  });

  it('a restricted key is not told "nothing new" from memory while the other instance committed one of its events', async () => {
    const at = (await post(a, '/v1/event_feed', {}, restricted)).json.next_cursor as string;
    await post(a, '/v1/emit_event', sampleEvent('mbx_other', 500), key); // in a's memory, hidden from the key
    const theirs = (await post(b, '/v1/emit_event', sampleEvent('mbx_sales', 501), key)).json.event.id as string;
    const page = (await post(a, '/v1/event_feed', { after: at }, restricted)).json;
    assert.deepEqual(
      page.events.map((e: { id: string }) => e.id),
      [theirs],
    );
  });

  it('a short page from memory is whole: it holds what the other instance committed after it too', async () => {
    for (const reader of [key, restricted]) {
      const at = (await post(a, '/v1/event_feed', {}, reader)).json.next_cursor as string;
      const mine = (await post(a, '/v1/emit_event', sampleEvent('mbx_sales', 600), key)).json.event.id as string; // in a's memory
      const theirs = (await post(b, '/v1/emit_event', sampleEvent('mbx_sales', 601), key)).json.event.id as string;
      const page = (await post(a, '/v1/event_feed', { after: at }, reader)).json;
      // Shorter than the limit says "nothing else was there" (the MCP text says "à jour").
      assert.deepEqual(
        page.events.map((e: { id: string }) => e.id),
        [mine, theirs],
      );
    }
  });

  it('a reader tailing one instance gets every event exactly once, in order, while both instances emit', async () => {
    let cursor = (await post(a, '/v1/event_feed', {}, key)).json.next_cursor as string;
    const emitted: string[] = [];
    const seen: string[] = [];
    const writer = (async () => {
      for (let n = 0; n < 60; n++)
        emitted.push((await post(n % 3 === 0 ? b : a, '/v1/emit_event', sampleEvent('mbx_sales', 1000 + n), key)).json.event.id);
    })();
    let done = false;
    void writer.then(() => (done = true));
    while (!done || seen.length < emitted.length) {
      // Small pages, a step behind the writer: most are full, the case memory answers alone.
      const page = (await post(a, '/v1/event_feed', { after: cursor, limit: 2 }, key)).json;
      seen.push(...(page.events as Array<{ id: string }>).map((e) => e.id));
      cursor = page.next_cursor;
      await sleep(page.events.length === 2 ? 5 : 15);
    }
    await writer;
    assert.deepEqual(seen, emitted);
  });
});
