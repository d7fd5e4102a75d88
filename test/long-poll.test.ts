import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { until } from './support/wait.ts';

const FEED = '/v1/event_feed';

/** A poll's answer and how long it took. */
async function poll(server: TestServer, key: string, body: Record<string, unknown>, prefer?: string) {
  const started = performance.now();
  const res = await server.post(FEED, body, key, prefer === undefined ? {} : { prefer });
  return { ...res, ms: performance.now() - started };
}

async function emit(server: TestServer, key: string, mailbox: string | undefined, n = 0) {
  const res = await server.post('/v1/emit_event', sampleEvent(mailbox, n), key);
  assert.equal(res.status, 201, res.text);
  return res.json.event;
}

/** The cursor at the workspace's head now (reads the whole feed). */
async function head(server: TestServer, key: string): Promise<string> {
  let cursor: string | undefined;
  for (;;) {
    const res = await server.post(FEED, cursor === undefined ? { limit: 500 } : { after: cursor, limit: 500 }, key);
    assert.equal(res.status, 200, res.text);
    if (res.json.events.length === 0) return res.json.next_cursor;
    cursor = res.json.next_cursor;
  }
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`event_feed long-poll (Prefer: wait) on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let ws: string;
    let readKey: string;
    let writeKey: string;

    before(async () => {
      server = await startTestServer(await create(), { HELD_READS_PER_KEY: '12' });
      ws = await server.workspace();
      readKey = (await server.key(ws, ['read'])).key;
      writeKey = (await server.key(ws, ['write'])).key;
      await emit(server, writeKey, 'mbx_a');
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    it('holds a read that finds nothing new until an event is stored, then answers it with Preference-Applied', async () => {
      const cursor = await head(server, readKey);
      const held = poll(server, readKey, { after: cursor }, 'wait=10');
      await until('the poll is held', () => server.services.heldReads.held === 1);
      const emitted = await emit(server, writeKey, 'mbx_a', 1);
      const res = await held;
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get('preference-applied'), 'wait=10');
      assert.deepEqual(
        res.json.events.map((e: any) => e.id),
        [emitted.id],
      );
      assert.ok(res.ms < 5000, `answered when the event came, not at the end of the wait (${res.ms} ms)`);
      assert.equal(server.services.heldReads.held, 0, 'its slot is given back');
    });

    it('answers an empty page with the cursor echoed when the wait ends with nothing new', async () => {
      const cursor = await head(server, readKey);
      const res = await poll(server, readKey, { after: cursor }, 'wait=1');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json, { events: [], next_cursor: cursor });
      assert.equal(res.headers.get('preference-applied'), 'wait=1');
      assert.ok(res.ms >= 900, `held about a second (${res.ms} ms)`);
    });

    it('answers at once when something is new, and without Prefer as before', async () => {
      const first = await server.post(FEED, {}, readKey);
      const cursor = first.json.next_cursor;
      await emit(server, writeKey, 'mbx_a', 2);
      const res = await poll(server, readKey, { after: cursor }, 'wait=30');
      assert.equal(res.json.events.length, 1);
      assert.ok(res.ms < 5000);
      const plain = await poll(server, readKey, { after: res.json.next_cursor });
      assert.deepEqual(plain.json.events, []);
      assert.equal(plain.headers.get('preference-applied'), null);
    });

    it('caps the wait at 60 s and ignores a Prefer it cannot read (RFC 7240)', async () => {
      const cursor = await head(server, readKey);
      const capped = poll(server, readKey, { after: cursor }, 'respond-async, wait=999');
      await until('held', () => server.services.heldReads.held === 1);
      await emit(server, writeKey, 'mbx_a', 3);
      assert.equal((await capped).headers.get('preference-applied'), 'wait=60');
      for (const prefer of ['wait=abc', 'wait=-1', 'wait', 'return=minimal']) {
        const res = await poll(server, readKey, { after: (await capped).json.next_cursor }, prefer);
        assert.equal(res.status, 200, `${prefer}: ${res.text}`);
        assert.equal(res.headers.get('preference-applied'), null, prefer);
        assert.ok(res.ms < 5000, prefer);
      }
    });

    it("wakes a key restricted to mailboxes only for its own mailboxes' events", async () => {
      const restricted = (await server.key(ws, ['read'], ['mbx_b'])).key;
      const cursor = await head(server, restricted);
      const held = poll(server, restricted, { after: cursor }, 'wait=10');
      await until('held', () => server.services.heldReads.held === 1);
      await emit(server, writeKey, 'mbx_a', 4);
      await emit(server, writeKey, undefined, 5);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(server.services.heldReads.held, 1, 'still held after events of other mailboxes');
      const mine = await emit(server, writeKey, 'mbx_b', 6);
      const res = await held;
      assert.deepEqual(
        res.json.events.map((e: any) => e.id),
        [mine.id],
        'only its own event',
      );
    });

    it("holds many polls of one workspace without spending the memory budget or the key's rate", async () => {
      // With a rate limit a page reserves 15 tokens: twelve held polls would owe 180 of a burst of 40.
      const limited = await startTestServer(server.database, {
        RATE_LIMIT_PER_SECOND: '20',
        RATE_LIMIT_BURST: '40',
        HELD_READS_PER_KEY: '12',
      });
      try {
        const cursor = await head(limited, readKey);
        // One after the other, each once the one before is held: twelve held at once would owe 192
        // tokens of a burst of 40 if a held poll kept its page's reservation.
        const polls: Array<ReturnType<typeof poll>> = [];
        for (let i = 1; i <= 12; i++) {
          polls.push(poll(limited, readKey, { after: cursor }, 'wait=20'));
          await until(`${i} held`, () => limited.services.heldReads.held === i);
        }
        const emitted = await emit(limited, writeKey, 'mbx_a', 7);
        for (const res of await Promise.all(polls)) {
          assert.equal(res.status, 200, res.text);
          assert.deepEqual(
            res.json.events.map((e: any) => e.id),
            [emitted.id],
          );
        }
      } finally {
        await limited.close();
        await limited.store.close();
      }
    });

    it("refuses a held read past the key's bound with 429 and Retry-After; others keys still hold", async () => {
      const cursor = await head(server, readKey);
      const gone = new AbortController();
      const polls = Array.from({ length: 12 }, () =>
        fetch(server.url + FEED, {
          method: 'POST',
          signal: gone.signal,
          headers: { authorization: `Bearer ${readKey}`, prefer: 'wait=30', 'content-type': 'application/json' },
          body: JSON.stringify({ after: cursor }),
        }).catch(() => undefined),
      );
      await until('twelve held', () => server.services.heldReads.held === 12);
      const refused = await poll(server, readKey, { after: cursor }, 'wait=30');
      assert.equal(refused.status, 429, refused.text);
      assert.equal(refused.json.error.code, 'rate_limited');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      assert.equal(refused.headers.get('preference-applied'), null);
      const other = (await server.key(ws, ['read'])).key;
      const otherPoll = poll(server, other, { after: cursor }, 'wait=1');
      assert.equal((await otherPoll).status, 200, 'another key is not refused');
      gone.abort();
      await Promise.all(polls);
      await until('the aborted polls give their slots back', () => server.services.heldReads.held === 0);
    });

    it('keeps nothing of the memory budget for a held poll whose client went away', async () => {
      const cursor = await head(server, readKey);
      const gone = new AbortController();
      const polls = Array.from({ length: 3 }, () =>
        fetch(server.url + FEED, {
          method: 'POST',
          signal: gone.signal,
          headers: { authorization: `Bearer ${readKey}`, prefer: 'wait=30', 'content-type': 'application/json' },
          body: JSON.stringify({ after: cursor }),
        }).catch(() => undefined),
      );
      await until('held', () => server.services.heldReads.held === 3);
      assert.equal(server.services.memory.used, 0, 'a held poll holds no memory while it waits');
      gone.abort();
      await Promise.all(polls);
      await until('slots given back', () => server.services.heldReads.held === 0);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(server.services.memory.used, 0, 'nor after its client left');
    });

    it('wakes for an event another process publishes to the same database', async () => {
      const cursor = await head(server, readKey);
      const held = poll(server, readKey, { after: cursor }, 'wait=10');
      await until('held', () => server.services.heldReads.held === 1);
      // server.store is a handle of its own: on SQLite another connection, as another process's would be.
      const [published] = await server.db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_a', 8)]));
      const res = await held;
      assert.deepEqual(
        res.json.events.map((e: any) => e.id),
        [JSON.parse(published!.envelope).id],
      );
      assert.ok(res.ms < 5000, `${res.ms} ms`);
    });

    it('wakes for an event published by another process (the library in a process of its own)', async () => {
      const cursor = await head(server, readKey);
      const held = poll(server, readKey, { after: cursor }, 'wait=20');
      await until('held', () => server.services.heldReads.held === 1);
      const library = fileURLToPath(new URL('../src/library.ts', import.meta.url));
      const script = `
        import { openDatabase, publish } from ${JSON.stringify(library)};
        const db = openDatabase(process.env.URL);
        const [p] = await db.transaction((trx) => publish(trx, process.env.WS, [JSON.parse(process.env.EVENT)]));
        process.stdout.write(JSON.parse(p.envelope).id);
        await db.destroy();`;
      const id = await new Promise<string>((resolve, reject) =>
        execFile(
          process.execPath,
          ['--import', 'tsx', '--input-type=module', '-e', script],
          { env: { ...process.env, URL: server.database.url, WS: ws, EVENT: JSON.stringify(sampleEvent('mbx_a', 9)) } },
          (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)),
        ),
      );
      const res = await held;
      assert.deepEqual(
        res.json.events.map((e: any) => e.id),
        [id],
      );
    });

    it('answers held reads at once when the server shuts down', async () => {
      const other = await startTestServer(server.database);
      const cursor = await head(other, readKey);
      const held = poll(other, readKey, { after: cursor }, 'wait=30');
      await until('held', () => other.services.heldReads.held === 1);
      const closing = other.close();
      const res = await held;
      await closing;
      await other.store.close();
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.json, { events: [], next_cursor: cursor });
      assert.ok(res.ms < 5000, `${res.ms} ms`);
    });
  });
}

for (const { kind, create, skip } of await databaseKinds()) {
  if (kind !== 'postgres') continue;
  describe('event_feed long-poll across two instances on Postgres', { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    it('a poll held on one instance wakes for an emit answered by the other', async () => {
      const database = await create();
      const a = await startTestServer(database);
      const b = await startTestServer(database);
      try {
        const ws = await a.workspace();
        const readKey = (await a.key(ws, ['read'])).key;
        const writeKey = (await a.key(ws, ['write'])).key;
        await until('both instances hear the channel', () => a.services.changes.live && b.services.changes.live);
        const cursor = await head(a, readKey);
        const held = poll(a, readKey, { after: cursor }, 'wait=10');
        await until('held', () => a.services.heldReads.held === 1);
        const emitted = await emit(b, writeKey, 'mbx_a');
        const res = await held;
        assert.deepEqual(
          res.json.events.map((e: any) => e.id),
          [emitted.id],
        );
        assert.ok(res.ms < 5000, `${res.ms} ms`);
      } finally {
        await a.stop();
        await b.stop();
        await database.drop();
      }
    });
  });
}
