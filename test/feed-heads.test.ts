/**
 * Polls at the head answered without a query (feed/heads.ts, store/postgres/changes.ts): what a
 * process may believe of a workspace's head, when it must stop believing it, and, on Postgres,
 * that two instances hear each other's commits, that an instance's own emit is seen by its next
 * poll, and that a lost or silent channel sends every poll back to the database.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ChangeWatch } from '../src/feed/change-watch.ts';
import { ChannelTrust } from '../src/changes/channel-trust.ts';
import { systemClock } from '../src/base/clock.ts';
import { GroupCommit } from '../src/feed/group-commit.ts';
import { publishInTransaction } from '../src/feed/publish.ts';
import { FeedHeads } from '../src/feed/heads.ts';
import { createLogger } from '../src/base/log.ts';
import { HEAD_LISTENER_NAME, listenForChanges } from '../src/store/postgres/changes.ts';
import { sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, sqliteDatabase, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer, serverKnex } from './support/server.ts';
import { startTcpProxy } from './support/tcp-proxy.ts';
import { checkoutsDuring, sqliteReadsDuring } from './support/checkouts.ts';
import { until } from './support/wait.ts';
import { openStore } from '../src/store/open-store.ts';
import type { Store } from '../src/store/port.ts';

/** Heads on a channel trust of their own, which the test opens and loses as a listener would. */
const headsOnTrust = (options: ConstructorParameters<typeof FeedHeads>[1] = {}) => {
  const trust = new ChannelTrust();
  return { trust, heads: new FeedHeads(trust, options) };
};

describe('FeedHeads: what a process may believe of a head', () => {
  const clock = () => {
    let t = 1000;
    return { now: () => t, advance: (ms: number) => (t += ms) };
  };

  it('knows nothing until its channel is open, and nothing after it is lost', () => {
    const { trust, heads } = headsOnTrust();
    heads.heard('ws_a', 5);
    assert.equal(heads.nothingAfter('ws_a', 5), false, 'heard before the channel opened');
    trust.open();
    heads.heard('ws_a', 5);
    assert.equal(heads.nothingAfter('ws_a', 5), true);
    assert.equal(heads.nothingAfter('ws_a', 7), true, 'a cursor past the head');
    assert.equal(heads.nothingAfter('ws_a', 4), false, 'an event after the cursor');
    assert.equal(heads.nothingAfter('ws_b', 5), false, 'another workspace');
    trust.lose();
    assert.equal(heads.nothingAfter('ws_a', 5), false);
    trust.open();
    assert.equal(heads.nothingAfter('ws_a', 5), false, 'forgotten with the channel, not back with the next one');
  });

  it('only raises a head: a late, lower news does not hide a commit', () => {
    const { trust, heads } = headsOnTrust();
    trust.open();
    heads.heard('ws_a', 9);
    heads.heard('ws_a', 6);
    assert.equal(heads.nothingAfter('ws_a', 6), false);
    heads.learn('ws_a', 7, heads.mark(), heads.now());
    assert.equal(heads.nothingAfter('ws_a', 8), false);
    assert.equal(heads.nothingAfter('ws_a', 9), true);
  });

  it('learns from a read only if the channel stayed up from before the read to now', () => {
    const { trust, heads } = headsOnTrust();
    assert.equal(heads.mark(), undefined);
    heads.learn('ws_a', 3, heads.mark(), heads.now());
    trust.open();
    assert.equal(heads.nothingAfter('ws_a', 3), false, 'a read begun with the channel down');
    const mark = heads.mark();
    trust.lose();
    trust.open();
    heads.learn('ws_a', 3, mark, heads.now());
    assert.equal(heads.nothingAfter('ws_a', 3), false, 'the channel dropped during the read');
    heads.learn('ws_a', 3, heads.mark(), heads.now());
    assert.equal(heads.nothingAfter('ws_a', 3), true);
  });

  it('trusts a head for trustMs after it was last confirmed', () => {
    const c = clock();
    const { trust, heads } = headsOnTrust({ trustMs: 100, now: c.now });
    trust.open();
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
    const { trust, heads } = headsOnTrust({ maxWorkspaces: 2 });
    trust.open();
    heads.heard('ws_a', 1);
    heads.heard('ws_b', 1);
    heads.heard('ws_c', 1);
    assert.deepEqual(
      ['ws_a', 'ws_b', 'ws_c'].map((ws) => heads.nothingAfter(ws, 1)),
      [false, true, true],
    );
  });
});

describe('FeedHeads.nothingAfterNow: every commit made before the request arrived is counted', () => {
  /** A channel whose round trips come back when the test says, each bringing the news queued for it. */
  function channel() {
    const { trust, heads } = headsOnTrust();
    const sent: Array<{ back: () => void; fail: () => void }> = [];
    trust.open(
      () =>
        new Promise<void>((resolve, reject) => {
          sent.push({ back: resolve, fail: () => reject(new Error('lost')) });
        }),
    );
    return { heads, sent };
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('waits for a round trip sent after the request arrived, and sees what came before its answer', async () => {
    const { heads, sent } = channel();
    heads.heard('ws_a', 5);
    const answer = heads.nothingAfterNow('ws_a', 5, heads.ticket());
    await turn();
    assert.equal(sent.length, 1, 'one round trip');
    heads.heard('ws_a', 6); // another instance's commit, heard before the round trip's answer
    sent[0]!.back();
    assert.equal(await answer, false);
    const again = heads.nothingAfterNow('ws_a', 6, heads.ticket());
    await turn();
    sent[1]!.back();
    assert.equal(await again, true);
  });

  it('shares one round trip among the requests of a turn; one arriving while it is out waits for the next', async () => {
    const { heads, sent } = channel();
    heads.heard('ws_a', 1);
    const first = [0, 1, 2].map(() => heads.nothingAfterNow('ws_a', 1, heads.ticket()));
    await turn();
    assert.equal(sent.length, 1);
    const late = heads.nothingAfterNow('ws_a', 1, heads.ticket()); // arrived after that one was sent
    await turn();
    assert.equal(sent.length, 1, 'one round trip out at a time');
    sent[0]!.back();
    assert.deepEqual(await Promise.all(first), [true, true, true]);
    await turn();
    assert.equal(sent.length, 2, 'the late request has one of its own');
    let settled = false;
    void late.then(() => (settled = true));
    await turn();
    assert.equal(settled, false, 'not answered by the round trip sent before it arrived');
    sent[1]!.back();
    assert.equal(await late, true);
    // One that arrived before a round trip now back needs no other; one arriving now does.
    assert.equal(await heads.nothingAfterNow('ws_a', 1, heads.ticket() - 1), true);
    assert.equal(sent.length, 2);
    void heads.nothingAfterNow('ws_a', 1, heads.ticket());
    await turn();
    assert.equal(sent.length, 3);
    sent[2]!.back();
  });

  it('answers false when the round trip fails, and at once when the head is not known', async () => {
    const { heads, sent } = channel();
    assert.equal(await heads.nothingAfterNow('ws_a', 1, heads.ticket()), false);
    assert.equal(sent.length, 0, 'no round trip for a head not known');
    heads.heard('ws_a', 1);
    const answer = heads.nothingAfterNow('ws_a', 1, heads.ticket());
    await turn();
    sent[0]!.fail();
    assert.equal(await answer, false);
  });

  it('needs no round trip without a channel that offers one (SQLite reads its file instead)', async () => {
    const { trust, heads } = headsOnTrust();
    trust.open();
    heads.heard('ws_a', 1);
    assert.equal(await heads.nothingAfterNow('ws_a', 1, heads.ticket()), true);
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

describe(
  'feed heads on Postgres: two instances on one database',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
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
      await until('both channels open', () => a.services.changes.live && b.services.changes.live);
    });
    after(async () => {
      await a?.stop();
      await b?.stop();
      await database?.drop();
    });

    it('a poll at the head is answered without a statement once the head is known, for full and restricted keys', async () => {
      const full = await feed(b, key); // reads, and learns the head
      assert.equal(
        await checkoutsDuring(serverKnex(b), async () =>
          assert.deepEqual(await feed(b, key, full.next_cursor), { ids: [], next_cursor: full.next_cursor }),
        ),
        0,
      );
      const mine = await feed(b, restricted);
      assert.equal(mine.ids.length, 1);
      assert.equal(
        await checkoutsDuring(serverKnex(b), async () =>
          assert.deepEqual(await feed(b, restricted, mine.next_cursor), { ids: [], next_cursor: mine.next_cursor }),
        ),
        0,
      );
      // Not at the head: read as ever.
      assert.ok((await checkoutsDuring(serverKnex(b), () => feed(b, key))) > 0);
    });

    it("hears the other instance's commits: its heads move without a read", async () => {
      const at = await feed(b, key);
      const seqBefore = b.services.cursors.decode(ws, at.next_cursor);
      assert.ok(b.services.changes.heads.nothingAfter(ws, seqBefore));
      const id = await emit(a, key, 2);
      await until(
        "b hears a's commit",
        () => !b.services.changes.heads.nothingAfter(ws, seqBefore) && b.services.changes.heads.nothingAfter(ws, seqBefore + 1),
      );
      assert.deepEqual((await feed(b, key, at.next_cursor)).ids, [id]);
    });

    /** Rounds of: `reader` polls at the head (answered from it), `writer` emits, `reader` polls again. */
    async function emitsSeenByNextPoll(reader: TestServer, writer: TestServer, rounds: number, firstN: number) {
      for (let n = 0; n < rounds; n++) {
        const at = await feed(reader, key);
        await feed(reader, key, at.next_cursor); // at the head, answered from it
        const id = await emit(writer, key, firstN + n);
        assert.deepEqual((await feed(reader, key, at.next_cursor)).ids, [id], `round ${n}`);
      }
    }

    it("an instance's own emit is in its very next poll", () => emitsSeenByNextPoll(b, b, 20, 100));

    it("an emit answered by one instance is in the other's very next poll (a client behind a load balancer)", () =>
      emitsSeenByNextPoll(b, a, 30, 300));

    it("counts the other instance's commit answered before the poll even when its notification comes 50 ms late", async () => {
      const proxy = await startTcpProxy(undefined, { delayMs: 50 });
      const far = await startTestServer({ ...database, url: proxy.via(database.url) }, QUIET);
      try {
        await until('the far channel open', () => far.services.changes.live, 10_000);
        await emitsSeenByNextPoll(far, a, 5, 400);
      } finally {
        await far.stop();
        await proxy.close();
      }
    });

    it('a lost channel sends polls back to the database, and heads are trusted again once it is back', async () => {
      const at = await feed(b, key);
      const killed = await a.db.raw(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = ? AND datname = current_database()`,
        [HEAD_LISTENER_NAME],
      );
      assert.equal(killed.rows.length, 2, 'one channel per instance');
      await until('b notices', () => !b.services.changes.live);
      // Committed while b cannot hear it: b must not answer from what it knew before.
      const id = await emit(a, key, 200);
      assert.deepEqual((await feed(b, key, at.next_cursor)).ids, [id]);
      await until('b listens again', () => b.services.changes.live);
      assert.deepEqual((await feed(b, key, at.next_cursor)).ids, [id], 'what b knew before the loss is forgotten');
      const now = await feed(b, key, at.next_cursor);
      assert.equal(await checkoutsDuring(serverKnex(b), () => feed(b, key, now.next_cursor)), 0, 'trusted again');
    });
  },
);

describe('the heads channel on Postgres', { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' }, () => {
  let database: TestDatabase;
  let db: Store;
  before(async () => {
    database = await postgresDatabase();
    db = openStore(database.url);
    await db.migrate();
  });
  after(async () => {
    await db?.close();
    await database?.drop();
  });

  it("counts another connection's commit answered before the request arrived, its notification still on the way", async () => {
    const changes = new ChangeWatch();
    const heads = changes.heads;
    const listener = listenForChanges(database.url, changes, createLogger('silent'));
    try {
      await until('open', () => changes.live);
      const ws = (await db.createWorkspace('w', false, Date.now())).id;
      const elsewhere = new GroupCommit(db, systemClock); // another instance: this process hears it only by the channel
      await elsewhere.append(ws, sampleEvent('mbx_sales', 0));
      await until('heard', () => heads.nothingAfter(ws, 1));
      let unheardYet = 0;
      // Until the notification lagged a few times (under load it may come back first for a while).
      for (let seq = 1; seq <= 400 && !(seq > 40 && unheardYet >= 3); seq++) {
        await elsewhere.append(ws, sampleEvent('mbx_sales', seq)); // answered: seq + 1 is committed
        const ticket = heads.ticket(); // a poll arrives
        if (heads.nothingAfter(ws, seq)) unheardYet++;
        assert.equal(await heads.nothingAfterNow(ws, seq, ticket), false, `event ${seq + 1} is not "nothing"`);
        assert.equal(await heads.nothingAfterNow(ws, seq + 1, heads.ticket()), true, `event ${seq + 1} is the head`);
      }
      // What the round trip is for: in-process, the notification usually has not been read yet.
      assert.ok(unheardYet > 0, 'the notification never lagged: this test proves nothing here');
    } finally {
      await listener.stop();
    }
  });

  it('gives its heads up when pings stop coming back, and takes them up again when they do', async () => {
    const proxy = await startTcpProxy();
    const changes = new ChangeWatch();
    const heads = changes.heads;
    const listener = listenForChanges(proxy.via(database.url), changes, createLogger('silent'), {
      pingIntervalMs: 100,
      pingTimeoutMs: 300,
    });
    try {
      await until('open', () => changes.live);
      const ws = (await db.createWorkspace('w', false, Date.now())).id;
      heads.heard(ws, 0);
      proxy.blackhole(); // nothing fails, nothing arrives: only the ping can tell
      await until('given up', () => !changes.live, 3000);
      assert.equal(heads.nothingAfter(ws, 0), false);
      await proxy.restore();
      await until('open again', () => changes.live, 15_000);
    } finally {
      await listener.stop();
      await proxy.close();
    }
  });
});

describe('an emit committed by this process', () => {
  it('raises its head at once, before any notification could (read-your-writes on one instance)', async () => {
    const database = await sqliteDatabase();
    const db = openStore(database.url);
    try {
      await db.migrate();
      const ws = (await db.createWorkspace('w', false, Date.now())).id;
      const { trust, heads } = headsOnTrust();
      trust.open(); // as if a channel were up; SQLite has none, so only the commit itself can tell
      const commits = new GroupCommit(db, systemClock, heads);
      await Promise.all([1, 2, 3].map((n) => commits.append(ws, sampleEvent('mbx_sales', n))));
      assert.equal(heads.nothingAfter(ws, 3), true);
      assert.equal(heads.nothingAfter(ws, 2), false);
    } finally {
      await db.close();
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
  const pageReads = (server: TestServer, work: () => Promise<unknown>) => sqliteReadsDuring(serverKnex(server), /FROM events/, work);
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
    assert.equal(
      await pageReads(a, async () => (fromMemory = await feed(a, key, start.next_cursor))),
      0,
      'just behind the head: from memory',
    );
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

  it('while a transaction of this server is open on its writing connection, polls read the file', async () => {
    const at = await feed(a, key);
    assert.equal(await pageReads(a, () => feed(a, key, at.next_cursor)), 0);
    await serverKnex(a).transaction(async (trx) => {
      await trx('workspaces').count({ n: '*' }); // its snapshot would hide what others commit now
      const [published] = await publishElsewhere(a, 4);
      assert.deepEqual((await feed(a, key, at.next_cursor)).ids, [JSON.parse(published!.envelope).id]);
    });
  });
});
