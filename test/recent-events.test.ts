/**
 * Tailing readers answered from the events this process just committed (feed/recent-events.ts):
 * a page comes from memory only when it is whole, it is byte for byte the page the database gives,
 * and emits interleaved from two instances still reach a tailing reader exactly once, in order.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { FeedHeads } from '../src/feed/heads.ts';
import { RecentEvents, type RecentEvent } from '../src/feed/recent-events.ts';
import { sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { checkoutsDuring } from './support/checkouts.ts';
import { until } from './support/wait.ts';

const event = (n: number, mailboxId: string | null = 'mbx_a'): RecentEvent => ({ mailboxId, envelope: `{"n":${n}}` });
const text = (page: { bytes: Buffer } | undefined) => (page === undefined ? undefined : `[${page.bytes.toString()}]`);

function fixture() {
  let t = 1000;
  const heads = new FeedHeads({ now: () => t });
  heads.open();
  return { heads, recent: new RecentEvents(() => t), advance: (ms: number) => (t += ms) };
}

describe('RecentEvents: a page from memory only when it is whole', () => {
  it('a full page needs nothing else; a short one needs the head to be known past the run', () => {
    const { heads, recent } = fixture();
    recent.committed('ws', 11, [event(11), event(12), event(13)]);
    assert.equal(text(recent.page('ws', 10, 2, null, heads)), '[{"n":11},{"n":12}]');
    assert.equal(recent.page('ws', 11, 5, null, heads), undefined, 'short, and the head is unknown');
    heads.heard('ws', 14);
    assert.equal(recent.page('ws', 11, 5, null, heads), undefined, 'seq 14 is not here');
    recent.committed('ws', 14, [event(14)]);
    const page = recent.page('ws', 11, 5, null, heads);
    assert.deepEqual([text(page), page?.count, page?.lastSeq], ['[{"n":12},{"n":13},{"n":14}]', 3, 14]);
  });

  it('not before the run, nor at or past its end (the heads answer that)', () => {
    const { heads, recent } = fixture();
    recent.committed('ws', 11, [event(11)]);
    heads.heard('ws', 11);
    assert.equal(recent.page('ws', 9, 5, null, heads), undefined, 'seq 10 is not here');
    assert.equal(text(recent.page('ws', 10, 5, null, heads)), '[{"n":11}]');
    assert.equal(recent.page('ws', 11, 5, null, heads), undefined);
    assert.equal(recent.page('other', 0, 5, null, heads), undefined);
  });

  it('a gap (another instance committed in between) starts the run again', () => {
    const { heads, recent } = fixture();
    recent.committed('ws', 1, [event(1), event(2)]);
    recent.committed('ws', 4, [event(4)]);
    heads.heard('ws', 4);
    assert.equal(recent.page('ws', 1, 5, null, heads), undefined, 'seq 3 was never here');
    assert.equal(recent.page('ws', 0, 1, null, heads), undefined, 'forgotten with the old run');
    assert.equal(text(recent.page('ws', 3, 5, null, heads)), '[{"n":4}]');
  });

  it("a restricted key gets its mailboxes' events only, and an empty page once the head is known", () => {
    const { heads, recent } = fixture();
    recent.committed('ws', 1, [event(1, 'mbx_a'), event(2, 'mbx_b'), event(3, null), event(4, 'mbx_a'), event(5, 'mbx_b')]);
    assert.equal(text(recent.page('ws', 0, 2, ['mbx_a'], heads)), '[{"n":1},{"n":4}]', 'full: two of mbx_a');
    assert.equal(recent.page('ws', 0, 3, ['mbx_a'], heads), undefined, 'short: a third one may be past the run');
    heads.heard('ws', 5);
    const page = recent.page('ws', 0, 3, ['mbx_a'], heads);
    assert.deepEqual([text(page), page?.lastSeq], ['[{"n":1},{"n":4}]', 4]);
    assert.deepEqual(recent.page('ws', 4, 3, ['mbx_a'], heads), { bytes: Buffer.alloc(0), count: 0, lastSeq: undefined });
    assert.equal(recent.page('ws', 4, 3, [], heads)?.count, 0);
  });

  it('keeps 256 events per workspace, 1 Mi characters in all (the least recently appended workspace goes), 60 s each', () => {
    const { heads, recent, advance } = fixture();
    recent.committed('ws', 1, Array.from({ length: 300 }, (_, i) => event(i + 1)));
    assert.equal(recent.page('ws', 43, 1, null, heads), undefined);
    assert.equal(text(recent.page('ws', 44, 1, null, heads)), '[{"n":45}]');

    const big = (n: number): RecentEvent => ({ mailboxId: null, envelope: `"${'x'.repeat(100_000)}${n}"` });
    recent.committed('old', 1, [big(1)]);
    recent.committed('new', 1, [big(1)]);
    for (let i = 0; i < 9; i++) recent.committed('bulk', i + 1, [big(i + 1)]);
    assert.equal(recent.page('old', 0, 1, null, heads), undefined, 'the least recently appended went first');
    assert.equal(recent.page('new', 0, 1, null, heads)?.count, 1);
    assert.equal(recent.page('bulk', 0, 9, null, heads)?.count, 9);

    advance(60_001);
    assert.equal(recent.page('bulk', 8, 1, null, heads), undefined, 'too old');
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
    await until('channels open', () => a.services.heads.live && b.services.heads.live);
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await database?.drop();
  });

  it("answers polls after its own emits without a statement, byte for byte what the database gives", async () => {
    const start = (await post(a, '/v1/event_feed', {}, key)).json.next_cursor as string;
    const startRestricted = (await post(a, '/v1/event_feed', {}, restricted)).json.next_cursor as string;
    for (let n = 0; n < 6; n++) await post(a, '/v1/emit_event', sampleEvent(n % 3 === 0 ? 'mbx_other' : n % 3 === 1 ? 'mbx_sales' : undefined, n), key);
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
          const checkouts = await checkoutsDuring(a.services.db, async () => (fromMemory = (await post(a, '/v1/event_feed', { after: cursor, limit }, reader)).text));
          assert.equal(fromMemory, fromDatabase, `limit ${limit}, page ${page}`);
          assert.equal(checkouts, 0, `limit ${limit}, page ${page}: answered from memory`);
          const next = JSON.parse(fromMemory).next_cursor as string;
          if (next === cursor) break;
          cursor = next;
        }
      }
    }
  });

  it('a reader tailing one instance gets every event exactly once, in order, while both instances emit', async () => {
    let cursor = (await post(a, '/v1/event_feed', {}, key)).json.next_cursor as string;
    const emitted: string[] = [];
    const seen: string[] = [];
    const writer = (async () => {
      for (let n = 0; n < 60; n++) emitted.push((await post(n % 3 === 0 ? b : a, '/v1/emit_event', sampleEvent('mbx_sales', 1000 + n), key)).json.event.id);
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
