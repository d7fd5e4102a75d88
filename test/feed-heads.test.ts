/**
 * Polls at the head answered without a query (feed/heads.ts, store/head-listener.ts): what a
 * process may believe of a workspace's head, when it must stop believing it, and, on Postgres,
 * that two instances hear each other's commits, that an instance's own emit is seen by its next
 * poll, and that a lost or silent channel sends every poll back to the database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { VerifiedKeys } from '../src/auth/verified-keys.ts';
import { systemClock } from '../src/clock.ts';
import { GroupCommit } from '../src/feed/group-commit.ts';
import { publishInTransaction } from '../src/feed/publish.ts';
import { FeedHeads } from '../src/feed/heads.ts';
import { createLogger } from '../src/log.ts';
import { HEAD_LISTENER_NAME, listenForHeads } from '../src/store/head-listener.ts';
import { openDatabase, type Db } from '../src/store/db.ts';
import { migrateLatest } from '../src/store/migrate.ts';
import { createWorkspace } from '../src/store/workspaces.ts';
import { sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, sqliteDatabase, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startTcpProxy } from './support/tcp-proxy.ts';
import { checkoutsDuring, sqliteReadsDuring } from './support/checkouts.ts';
import { until } from './support/wait.ts';

describe('FeedHeads: what a process may believe of a head', () => {
  const clock = () => {
    let t = 1000;
    return { now: () => t, advance: (ms: number) => (t += ms) };
  };

  it('knows nothing until its channel is open, and nothing after it is lost', () => {
    const heads = new FeedHeads();
    heads.heard('ws_a', 5);
    assert.equal(heads.nothingAfter('ws_a', 5), false, 'heard before the channel opened');
    heads.open();
    heads.heard('ws_a', 5);
    assert.equal(heads.nothingAfter('ws_a', 5), true);
    assert.equal(heads.nothingAfter('ws_a', 7), true, 'a cursor past the head');
    assert.equal(heads.nothingAfter('ws_a', 4), false, 'an event after the cursor');
    assert.equal(heads.nothingAfter('ws_b', 5), false, 'another workspace');
    heads.lose();
    assert.equal(heads.nothingAfter('ws_a', 5), false);
    heads.open();
    assert.equal(heads.nothingAfter('ws_a', 5), false, 'forgotten with the channel, not back with the next one');
  });

  it('only raises a head: a late, lower news does not hide a commit', () => {
    const heads = new FeedHeads();
    heads.open();
    heads.heard('ws_a', 9);
    heads.heard('ws_a', 6);
    assert.equal(heads.nothingAfter('ws_a', 6), false);
    heads.learn('ws_a', 7, heads.mark(), heads.now());
    assert.equal(heads.nothingAfter('ws_a', 8), false);
    assert.equal(heads.nothingAfter('ws_a', 9), true);
  });

  it('learns from a read only if the channel stayed up from before the read to now', () => {
    const heads = new FeedHeads();
    assert.equal(heads.mark(), undefined);
    heads.learn('ws_a', 3, heads.mark(), heads.now());
    heads.open();
    assert.equal(heads.nothingAfter('ws_a', 3), false, 'a read begun with the channel down');
    const mark = heads.mark();
    heads.lose();
    heads.open();
    heads.learn('ws_a', 3, mark, heads.now());
    assert.equal(heads.nothingAfter('ws_a', 3), false, 'the channel dropped during the read');
    heads.learn('ws_a', 3, heads.mark(), heads.now());
    assert.equal(heads.nothingAfter('ws_a', 3), true);
  });

  it('trusts a head for trustMs after it was last confirmed', () => {
    const c = clock();
    const heads = new FeedHeads({ trustMs: 100, now: c.now });
    heads.open();
    heads.heard('ws_a', 2);
    c.advance(100);
    assert.equal(heads.nothingAfter('ws_a', 2), true);
    c.advance(1);
    assert.equal(heads.nothingAfter('ws_a', 2), false, 'too old');
    heads.learn('ws_a', 2, heads.mark(), c.now() - 50);
    assert.equal(heads.nothingAfter('ws_a', 2), true, 'confirmed by a read begun 50 ms ago');
    c.advance(51);
    assert.equal(heads.nothingAfter('ws_a', 2), false, 'trusted from when the read began, not from when it ended');
  });

  it('keeps at most maxWorkspaces heads, forgetting the oldest', () => {
    const heads = new FeedHeads({ maxWorkspaces: 2 });
    heads.open();
    heads.heard('ws_a', 1);
    heads.heard('ws_b', 1);
    heads.heard('ws_c', 1);
    assert.deepEqual(['ws_a', 'ws_b', 'ws_c'].map((ws) => heads.nothingAfter(ws, 1)), [false, true, true]);
  });
});

async function feed(server: TestServer, key: string, after?: string) {
  const response = await server.post('/v1/event_feed', after === undefined ? {} : { after }, key);
  assert.equal(response.status, 200, response.text);
  return { ids: (response.json.events as Array<{ id: string }>).map((e) => e.id), next_cursor: response.json.next_cursor as string };
}

async function emit(server: TestServer, key: string, n: number): Promise<string> {
  const response = await server.post('/v1/emit_event', sampleEvent('mbx_sales', n), key);
  assert.equal(response.status, 201, response.text);
  return response.json.event.id;
}

const QUIET = { WEBHOOK_DISPATCH_INTERVAL_MS: '60000' };

describe('feed heads on Postgres: two instances on one database', { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' }, () => {
  let database: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  let ws: string;
  let key: string;
  let restricted: string;

  before(async () => {
    database = await postgresDatabase();
    a = await startTestServer(database, QUIET);
    b = await startTestServer(database, QUIET);
    ws = await a.workspace();
    ({ key } = await a.key(ws, ['read', 'write']));
    ({ key: restricted } = await a.key(ws, ['read'], ['mbx_sales']));
    await emit(a, key, 1);
    await until('both channels open', () => a.services.heads.live && b.services.heads.live);
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await database?.drop();
  });

  it('a poll at the head is answered without a statement once the head is known, for full and restricted keys', async () => {
    const full = await feed(b, key); // reads, and learns the head
    assert.equal(await checkoutsDuring(b.services.db, async () => assert.deepEqual(await feed(b, key, full.next_cursor), { ids: [], next_cursor: full.next_cursor })), 0);
    const mine = await feed(b, restricted);
    assert.equal(mine.ids.length, 1);
    assert.equal(await checkoutsDuring(b.services.db, async () => assert.deepEqual(await feed(b, restricted, mine.next_cursor), { ids: [], next_cursor: mine.next_cursor })), 0);
    // Not at the head: read as ever.
    assert.ok((await checkoutsDuring(b.services.db, () => feed(b, key))) > 0);
  });

  it("hears the other instance's commits: its heads move without a read", async () => {
    const at = await feed(b, key);
    const seqBefore = b.services.cursors.decode(ws, at.next_cursor);
    assert.ok(b.services.heads.nothingAfter(ws, seqBefore));
    const id = await emit(a, key, 2);
    await until("b hears a's commit", () => !b.services.heads.nothingAfter(ws, seqBefore) && b.services.heads.nothingAfter(ws, seqBefore + 1));
    assert.deepEqual((await feed(b, key, at.next_cursor)).ids, [id]);
  });

  it("an instance's own emit is in its very next poll", async () => {
    for (let n = 0; n < 20; n++) {
      const at = await feed(b, key);
      await feed(b, key, at.next_cursor); // at the head, answered from it
      const id = await emit(b, key, 100 + n);
      assert.deepEqual((await feed(b, key, at.next_cursor)).ids, [id], `round ${n}`);
    }
  });

  it('a lost channel sends polls back to the database, and heads are trusted again once it is back', async () => {
    const at = await feed(b, key);
    const killed = await a.db.raw(
      `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = ? AND datname = current_database()`,
      [HEAD_LISTENER_NAME],
    );
    assert.equal(killed.rows.length, 2, 'one channel per instance');
    await until('b notices', () => !b.services.heads.live);
    // Committed while b cannot hear it: b must not answer from what it knew before.
    const id = await emit(a, key, 200);
    assert.deepEqual((await feed(b, key, at.next_cursor)).ids, [id]);
    await until('b listens again', () => b.services.heads.live);
    assert.deepEqual((await feed(b, key, at.next_cursor)).ids, [id], 'what b knew before the loss is forgotten');
    const now = await feed(b, key, at.next_cursor);
    assert.equal(await checkoutsDuring(b.services.db, () => feed(b, key, now.next_cursor)), 0, 'trusted again');
  });
});

describe('the heads channel on Postgres', { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' }, () => {
  let database: TestDatabase;
  let db: Db;
  before(async () => {
    database = await postgresDatabase();
    db = openDatabase(database.url);
    await migrateLatest(db);
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('gives its heads up when pings stop coming back, and takes them up again when they do', async () => {
    const proxy = await startTcpProxy();
    const heads = new FeedHeads();
    const listener = listenForHeads(proxy.via(database.url), heads, new VerifiedKeys(), createLogger('silent'), { pingIntervalMs: 100, pingTimeoutMs: 300 });
    try {
      await until('open', () => heads.live);
      const ws = (await createWorkspace(db, 'w', false, Date.now())).id;
      heads.heard(ws, 0);
      proxy.blackhole(); // nothing fails, nothing arrives: only the ping can tell
      await until('given up', () => !heads.live, 3000);
      assert.equal(heads.nothingAfter(ws, 0), false);
      await proxy.restore();
      await until('open again', () => heads.live, 15_000);
    } finally {
      await listener.stop();
      await proxy.close();
    }
  });
});

describe('an emit committed by this process', () => {
  it('raises its head at once, before any notification could (read-your-writes on one instance)', async () => {
    const database = await sqliteDatabase();
    const db = openDatabase(database.url);
    try {
      await migrateLatest(db);
      const ws = (await createWorkspace(db, 'w', false, Date.now())).id;
      const heads = new FeedHeads();
      heads.open(); // as if a channel were up; SQLite has none, so only the commit itself can tell
      const commits = new GroupCommit(db, systemClock, heads);
      await Promise.all([1, 2, 3].map((n) => commits.append(ws, sampleEvent('mbx_sales', n))));
      assert.equal(heads.nothingAfter(ws, 3), true);
      assert.equal(heads.nothingAfter(ws, 2), false);
    } finally {
      await db.destroy();
      await database.drop();
    }
  });
});

describe('feed heads and recent events on SQLite: known while no other process writes to the file', () => {
  let database: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  let ws: string;
  let key: string;
  const pageReads = (server: TestServer, work: () => Promise<unknown>) => sqliteReadsDuring(server.services.db, /FROM events/, work);
  /** What another process does: the library, on a handle (a connection) of its own. */
  const publishElsewhere = (server: TestServer, n: number) =>
    server.db.transaction((trx) => publishInTransaction(trx, ws, [sampleEvent('mbx_sales', n)], new Date()));

  before(async () => {
    database = await sqliteDatabase();
    a = await startTestServer(database, QUIET);
    b = await startTestServer(database, QUIET); // a second server on the same file
    ws = await a.workspace();
    ({ key } = await a.key(ws, ['read', 'write']));
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await database?.drop();
  });

  it("polls after this server's own emits read nothing, and give what a server that read the file gives", async () => {
    const start = await feed(a, key);
    await emit(a, key, 1);
    await emit(a, key, 2);
    const fromFile = await feed(b, key, start.next_cursor);
    let fromMemory: Awaited<ReturnType<typeof feed>> | undefined;
    assert.equal(await pageReads(a, async () => (fromMemory = await feed(a, key, start.next_cursor))), 0, 'just behind the head: from memory');
    assert.deepEqual(fromMemory, fromFile);
    assert.equal(fromFile.ids.length, 2);
    assert.equal(await pageReads(a, () => feed(a, key, fromFile.next_cursor)), 0, 'at the head: nothing to read');
  });

  it('an event another process wrote is in the very next poll', async () => {
    const at = await feed(a, key);
    assert.equal(await pageReads(a, () => feed(a, key, at.next_cursor)), 0);
    const [published] = await publishElsewhere(a, 3);
    assert.deepEqual((await feed(a, key, at.next_cursor)).ids, [JSON.parse(published!.envelope).id]);
  });

  it("while a transaction of this server is open on its writing connection, polls read the file", async () => {
    const at = await feed(a, key);
    assert.equal(await pageReads(a, () => feed(a, key, at.next_cursor)), 0);
    await a.services.db.transaction(async (trx) => {
      await trx('workspaces').count({ n: '*' }); // its snapshot would hide what others commit now
      const [published] = await publishElsewhere(a, 4);
      assert.deepEqual((await feed(a, key, at.next_cursor)).ids, [JSON.parse(published!.envelope).id]);
    });
  });
});
