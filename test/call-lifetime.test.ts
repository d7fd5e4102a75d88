/**
 * Every guarantee holds for the whole life of a call, not only where it starts: a key revoked
 * while a request's body is on its way, while a poll is held or while a stream is open is refused
 * there too (on one instance, and on Postgres across two); memory a call reserved goes back however
 * it ends; held reads pay for every read; a workspace's keys share one rate and one share of the
 * held reads; a stream's pages are admitted against the memory budget by their real size.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { publish } from '../src/library.ts';
import { largeEvent, sampleEvent } from './support/contract.ts';
import { databaseKinds, postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { until } from './support/wait.ts';

const FEED = '/v1/event_feed';

/** A request whose headers and first half of the body are sent now, the rest on `finish`. */
function slowRequest(baseUrl: string, path: string, key: string, body: string) {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (answer += chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  const half = Math.floor(body.length / 2);
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, half)}`,
  );
  return {
    async finish(): Promise<{ status: number; body: any }> {
      // Not half-closed: a client that ends its side may have its answer dropped; the server closes after answering (Connection: close).
      socket.write(body.slice(half));
      await closed;
      const [head = '', rest = ''] = answer.split('\r\n\r\n');
      const status = Number(head.split(' ')[1]);
      const json = rest.includes('{') ? JSON.parse(rest.slice(rest.indexOf('{'), rest.lastIndexOf('}') + 1)) : undefined;
      return { status, body: json };
    },
  };
}

/** An event stream read as it comes: its raw text, and whether it ended. */
function openStream(baseUrl: string, key: string, body: Record<string, unknown>) {
  const gone = new AbortController();
  const state = { text: '', ended: false, status: 0 };
  const done = (async () => {
    const res = await fetch(baseUrl + FEED, {
      method: 'POST',
      signal: gone.signal,
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    state.status = res.status;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body!) state.text += decoder.decode(chunk as Uint8Array, { stream: true });
    } catch {}
    state.ended = true;
  })().catch(() => void (state.ended = true));
  return { state, close: () => gone.abort(), done };
}

async function emit(server: TestServer, key: string, mailbox = 'mbx_a', n = 0): Promise<any> {
  const res = await server.post('/v1/emit_event', sampleEvent(mailbox, n), key);
  assert.equal(res.status, 201, res.text);
  return res.json.event;
}

/** The cursor at the workspace's head now. */
async function head(server: TestServer, key: string): Promise<string> {
  let cursor: string | undefined;
  for (;;) {
    const res = await server.post(FEED, cursor === undefined ? { limit: 500 } : { after: cursor, limit: 500 }, key);
    assert.equal(res.status, 200, res.text);
    if (res.json.events.length === 0) return res.json.next_cursor;
    cursor = res.json.next_cursor;
  }
}

/**
 * The revocation checks, with `holder` the instance the call is on and `revoker` the one the admin
 * revokes through (the same server, or another instance on the same database).
 */
function revocationChecks(servers: () => { holder: TestServer; revoker: TestServer }) {
  let ws: string;
  let admin: string;

  before(async () => {
    const { holder } = servers();
    ws = await holder.workspace();
    admin = (await holder.key(ws, ['read', 'write', 'admin'])).key;
    await emit(holder, admin);
  });

  const newKey = async (permissions: string[]) => {
    const created = await servers().revoker.post('/v1/create_key', { permissions }, admin);
    assert.equal(created.status, 201, created.text);
    return { id: created.json.api_key.id as string, key: created.json.key as string };
  };
  const revoke = async (id: string) => {
    const res = await servers().revoker.post('/v1/revoke_key', { id }, admin);
    assert.equal(res.status, 200, res.text);
  };

  it('refuses a request whose key was revoked while its body was on its way: no key is created', async () => {
    const { holder } = servers();
    const attacker = await newKey(['read', 'write', 'admin']);
    assert.equal((await holder.post('/v1/list_keys', {}, attacker.key)).status, 200, 'the holder knows (and keeps) the key');
    const pending = slowRequest(
      holder.url,
      '/v1/create_key',
      attacker.key,
      JSON.stringify({ permissions: ['read', 'write', 'admin'], label: 'created after revocation' }),
    );
    await sleep(300);
    await revoke(attacker.id);
    const answer = await pending.finish();
    assert.equal(answer.status, 401, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, 'unauthorized');
    const keys = await holder.post('/v1/list_keys', {}, admin);
    assert.ok(!keys.json.keys.some((k: any) => k.label === 'created after revocation'), 'no key was created');
  });

  it('answers a held poll unauthorized as soon as its key is revoked', async () => {
    const { holder } = servers();
    const reader = await newKey(['read']);
    const cursor = await head(holder, reader.key);
    const started = performance.now();
    const held = holder.post(FEED, { after: cursor }, reader.key, { prefer: 'wait=30' });
    await until('the poll is held', () => holder.services.heldReads.held >= 1);
    await revoke(reader.id);
    const answer = await held;
    assert.equal(answer.status, 401, answer.text);
    assert.equal(answer.json.error.code, 'unauthorized');
    assert.ok(performance.now() - started < 10_000, 'long before its wait was over');
    await emit(holder, admin);
  });

  it('ends an open stream with an unauthorized error event once its key is revoked, and sends nothing after', async () => {
    const { holder } = servers();
    const reader = await newKey(['read']);
    const cursor = await head(holder, reader.key);
    const stream = openStream(holder.url, reader.key, { after: cursor });
    await until('the stream is open', () => stream.state.status === 200 && holder.services.heldReads.held >= 1);
    await emit(holder, admin, 'mbx_a', 1);
    await until('the event before the revocation arrives', () => stream.state.text.includes('data: {'));
    await revoke(reader.id);
    await until('the stream ends', () => stream.state.ended, 5000);
    for (let i = 0; i < 3; i++) await emit(holder, admin, 'mbx_a', 10 + i);
    const messages = stream.state.text.split('\n\n').filter((m) => m.includes('data: '));
    assert.match(messages.at(-1)!, /^event: error\ndata: \{"error":\{"code":"unauthorized"/m);
    assert.equal(messages.filter((m) => !m.startsWith('event: error')).length, 1, 'only the event emitted before the revocation');
    stream.close();
  });
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(
    `a revoked key is refused for the whole life of a call, on ${kind}`,
    { skip: skip && 'Postgres unreachable (see notice above)' },
    () => {
      let server: TestServer;
      before(async () => (server = await startTestServer(await create())));
      after(async () => {
        await server?.stop();
        await server?.database.drop();
      });
      revocationChecks(() => ({ holder: server, revoker: server }));

      it('ends a stream whose key another process revoked (behind the API)', async () => {
        const ws = await server.workspace();
        const reader = await server.key(ws, ['read']);
        const stream = openStream(server.url, reader.key, {});
        await until('the stream is open', () => stream.state.status === 200 && server.services.heldReads.held >= 1);
        await server.revokeKey(reader.id);
        await until('the stream ends', () => stream.state.ended, 5000);
        assert.match(stream.state.text, /event: error\ndata: \{"error":\{"code":"unauthorized"/);
      });
    },
  );
}

describe(
  'a revoked key is refused for the whole life of a call across two Postgres instances',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
    let database: TestDatabase;
    let one: TestServer;
    let two: TestServer;
    before(async () => {
      database = await postgresDatabase();
      one = await startTestServer(database);
      two = await startTestServer(database);
    });
    after(async () => {
      await one?.stop();
      await two?.stop();
      await database?.drop();
    });
    revocationChecks(() => ({ holder: two, revoker: one }));
  },
);

for (const { kind, create, skip } of await databaseKinds()) {
  describe(
    `what a call holds goes back however it ends, and every read is paid, on ${kind}`,
    { skip: skip && 'Postgres unreachable (see notice above)' },
    () => {
      let server: TestServer;
      let ws: string;
      let writer: string;

      before(async () => {
        // A tenant's memory share (an eighth of 8 MiB) is smaller than a page's reservation: its reads go one at a time.
        server = await startTestServer(await create(), {
          MEMORY_BUDGET_MB: '8',
          HELD_READS_PER_KEY: '400',
          HELD_READS_PER_WORKSPACE: '400',
          STREAM_STALL_MS: '3000',
        });
        ws = await server.workspace();
        writer = (await server.key(ws, ['read', 'write'])).key;
      });
      after(async () => {
        await server?.stop();
        await server?.database.drop();
      });

      it('gives back the memory of polls whose clients left while they waited for it after a wake', async () => {
        const reader = (await server.key(ws, ['read'])).key;
        for (let round = 0; round < 3; round++) {
          const cursor = await head(server, reader);
          // Held a few at a time: their first reads (not woken, each its own) queue for this small budget.
          const polls: Array<{ gone: AbortController; answered: Promise<unknown> }> = [];
          while (polls.length < 150) {
            const heldBefore = server.services.heldReads.held;
            for (let i = 0; i < 25; i++) {
              const gone = new AbortController();
              const answered = fetch(server.url + FEED, {
                method: 'POST',
                signal: gone.signal,
                headers: { authorization: `Bearer ${reader}`, 'content-type': 'application/json', prefer: 'wait=20' },
                body: JSON.stringify({ after: cursor, limit: 500 }),
              })
                .then(async (res) => {
                  const text = await res.text();
                  if (process.env.DEBUG_POLLS && res.status !== 200) console.log('poll', res.status, text.slice(0, 200));
                })
                .catch(() => undefined);
              polls.push({ gone, answered });
            }
            await until('the polls are held', () => server.services.heldReads.held >= heldBefore + 25, 20_000);
          }
          // One commit of large events: every poll wakes, and each woken read waits its turn for memory.
          const events = Array.from({ length: 16 }, (_, i) => largeEvent('mbx_a', round * 100 + i));
          await Promise.all(events.map((event) => server.post('/v1/emit_event', event, writer)));
          await sleep(15);
          for (const poll of polls) poll.gone.abort();
          await Promise.all(polls.map((poll) => poll.answered));
        }
        await until('every reservation is given back', () => server.services.memory.used === 0, 20_000);
        const res = await server.post(FEED, { limit: 500 }, reader);
        assert.equal(res.status, 200, 'the workspace still reads');
      });

      it('shares one read, one memory reservation and one answer among the polls one commit wakes', async () => {
        const reader = (await server.key(ws, ['read'])).key;
        const cursor = await head(server, reader);
        // Held a few at a time: their first reads (not woken, each its own) queue for this small budget.
        const polls: Array<ReturnType<typeof server.post>> = [];
        while (polls.length < 300) {
          const before = server.services.heldReads.held;
          for (let i = 0; i < 20; i++) polls.push(server.post(FEED, { after: cursor, limit: 500 }, reader, { prefer: 'wait=30' }));
          await until('the polls are held', () => server.services.heldReads.held >= before + 20, 20_000);
        }
        const { memory, store } = server.services;
        const admit = memory.admit.bind(memory);
        const readPage = store.readPage.bind(store);
        let admissions = 0;
        let reads = 0;
        memory.admit = (...args) => (admissions++, admit(...args));
        store.readPage = (...args) => (reads++, readPage(...args));
        try {
          // Written behind the service (another process, as far as it knows): read from the database, not from its own recent commits.
          await server.db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_a', 4242)]));
          const answers = await Promise.all(polls);
          assert.ok(
            answers.every((a) => a.status === 200 && a.json.events.length === 1),
            answers.find((a) => a.status !== 200)?.text,
          );
          assert.equal(new Set(answers.map((a) => a.text)).size, 1, 'every poll got the same answer');
          assert.ok(reads <= 2, `${reads} page reads for 300 woken polls`);
          assert.ok(admissions <= 2, `${admissions} memory admissions for 300 woken polls`);
        } finally {
          memory.admit = admit;
          store.readPage = readPage;
        }
        await until('every reservation is given back', () => server.services.memory.used === 0, 5000);
      });

      it("gives a follower's page read's memory back once its answer is written, not a moment later", async () => {
        const reader = (await server.key(ws, ['read'])).key;
        const cursor = await head(server, reader);
        await emit(server, writer, 'mbx_a', 4545);
        // Behind the service: read from the database, through a follower's shared first read (Prefer: wait, something new).
        await server.db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_a', 4546)]));
        for (let page = 0; page < 5; page++) {
          const answer = await server.post(FEED, { after: cursor, limit: 500 }, reader, { prefer: 'wait=5' });
          assert.equal(answer.status, 200, answer.text);
          // A finished read kept for later sharers would hold its page for KEPT_MS (200 ms): a
          // replay would then wait on its own pages for the workspace's share.
          await until('the page read gives its memory back', () => server.services.memory.used === 0, 100);
        }
      });

      it('shares one read and one memory reservation among followers that ask again after the same cursor, arrived before it began', async () => {
        const reader = (await server.key(ws, ['read'])).key;
        const cursor = await head(server, reader);
        const { memory, store } = server.services;
        const admit = memory.admit.bind(memory);
        const readPage = store.readPage.bind(store);
        let admissions = 0;
        let reads = 0;
        // Memory granted slowly: the requests sent meanwhile arrive before the first read begins.
        memory.admit = async (...args) => (admissions++, await sleep(300), admit(...args));
        store.readPage = (...args) => (reads++, readPage(...args));
        try {
          await server.db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_a', 4343)]));
          // Followers: held polls (Prefer: wait) asking again after the same cursor; something is new, so none is held.
          const answers = await Promise.all(
            Array.from({ length: 100 }, () => server.post(FEED, { after: cursor, limit: 500 }, reader, { prefer: 'wait=5' })),
          );
          assert.ok(
            answers.every((a) => a.status === 200 && a.json.events.length === 1),
            answers.find((a) => a.status !== 200)?.text,
          );
          assert.equal(new Set(answers.map((a) => a.text)).size, 1, 'every request got the same answer');
          assert.ok(reads <= 3, `${reads} page reads for 100 requests after one cursor`);
          assert.ok(admissions <= 3, `${admissions} memory admissions for 100 requests after one cursor`);
        } finally {
          memory.admit = admit;
          store.readPage = readPage;
        }
        await until('every reservation is given back', () => server.services.memory.used === 0, 5000);
      });

      it('wakes a restricted poll only for commits of its mailboxes: other mailboxes cost it no read', async () => {
        const restricted = (await server.key(ws, ['read'], ['mbx_r'])).key;
        const cursor = await head(server, restricted);
        // Several limits: polls that would not share one read.
        const polls = Array.from({ length: 10 }, (_, i) =>
          server.post(FEED, { after: cursor, limit: 100 + i }, restricted, { prefer: 'wait=20' }),
        );
        await until('the polls are held', () => server.services.heldReads.held >= 10);
        const feed = server.services.feed;
        const read = feed.read.bind(feed);
        let reads = 0;
        // The restricted polls' reads only (another test's leftovers may read too).
        feed.read = (r) => (r.scope.mailboxes?.includes('mbx_r') && reads++, read(r));
        try {
          for (let i = 0; i < 20; i++) await emit(server, writer, 'mbx_other', i);
          await sleep(200);
          assert.equal(reads, 0, 'no restricted poll read again for events of other mailboxes');
          const mine = await emit(server, writer, 'mbx_r', 99);
          for (const answer of await Promise.all(polls)) {
            assert.equal(answer.status, 200, answer.text);
            assert.deepEqual(
              answer.json.events.map((e: any) => e.id),
              [mine.id],
            );
          }
        } finally {
          feed.read = read;
        }
      });
    },
  );

  describe(
    `held reads pay for each read, and a workspace's keys share one budget, on ${kind}`,
    { skip: skip && 'Postgres unreachable (see notice above)' },
    () => {
      let server: TestServer;
      let ws: string;
      let writer: string;

      before(async () => {
        server = await startTestServer(await create(), {
          RATE_LIMIT_PER_SECOND: '0.01',
          RATE_LIMIT_BURST: '20',
          RATE_LIMIT_WORKSPACE_BURST: '60',
          HELD_READS_PER_KEY: '3',
          HELD_READS_PER_WORKSPACE: '4',
        });
        ws = await server.workspace();
        writer = (await server.key(ws, ['read', 'write'])).key;
      });
      after(async () => {
        await server?.stop();
        await server?.database.drop();
      });

      it("charges a held poll's key for each read after a wake (no refund for a read that found nothing)", async () => {
        const { id, key } = await server.key(ws, ['read'], ['mbx_r']);
        const cursor = await head(server, key);
        const bucket = () => server.services.rateLimiter.keys.state(id).remaining;
        const held = server.post(FEED, { after: cursor }, key, { prefer: 'wait=20' });
        await until('the poll is held', () => server.services.heldReads.held >= 1);
        const before = bucket();
        // Written behind the service (as another process would): the mailboxes are not known, so the poll reads again.
        for (let i = 0; i < 3; i++) {
          await server.db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_other', i)]));
          await sleep(400);
        }
        assert.ok(bucket() <= before - 3, `three reads after three wakes are paid: ${before} → ${bucket()} tokens`);
        await emit(server, writer, 'mbx_r', 7);
        assert.equal((await held).status, 200);
      });

      it("bounds a workspace's held reads whatever its number of keys, and leaves other workspaces theirs", async () => {
        const keys = await Promise.all([1, 2].map(() => server.key(ws, ['read'])));
        const cursor = await head(server, keys[0]!.key);
        const gone = new AbortController();
        const hold = (key: string) =>
          fetch(server.url + FEED, {
            method: 'POST',
            signal: gone.signal,
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', prefer: 'wait=20' },
            body: JSON.stringify({ after: cursor }),
          }).catch(() => undefined);
        // One at a time: a poll reserves a page's tokens until it is held, and the key's burst is small.
        for (const key of [keys[0]!.key, keys[0]!.key, keys[0]!.key, keys[1]!.key]) {
          const heldNow = server.services.heldReads.held;
          void hold(key);
          await until('the poll is held', () => server.services.heldReads.held >= heldNow + 1);
        }
        const refused = await server.post(FEED, { after: cursor }, keys[1]!.key, { prefer: 'wait=20' });
        assert.equal(refused.status, 429, refused.text);
        assert.match(refused.json.error.message, /workspace/);
        const other = await server.workspace();
        const otherKey = (await server.key(other, ['read'])).key;
        const otherCursor = await head(server, otherKey);
        const theirs = server.post(FEED, { after: otherCursor }, otherKey, { prefer: 'wait=1' });
        assert.equal((await theirs).status, 200, 'another workspace still holds its reads');
        gone.abort();
      });

      it("shares one rate budget among a workspace's keys: more keys do not buy more requests", async () => {
        const other = await server.workspace();
        const keys = await Promise.all(Array.from({ length: 8 }, async () => (await server.key(other, ['read'])).key));
        const statuses: number[] = [];
        const reasons = new Set<string>();
        const started = performance.now();
        for (const key of keys) {
          for (let i = 0; i < 12; i++) {
            const res = await server.post('/v1/list_keys', {}, key).catch(() => undefined);
            if (!res) continue;
            statuses.push(res.status);
            if (res.status === 429) reasons.add(res.json.error.message);
          }
        }
        const accepted = statuses.filter((s) => s !== 429).length;
        // The burst, and what flowed in meanwhile (4 keys' worth of 0.01/s), on however slow a machine.
        const refilled = Math.ceil(((performance.now() - started) / 1000) * 0.04);
        assert.ok(
          accepted <= 60 + refilled + 1,
          `${accepted} of ${statuses.length} accepted: the workspace's burst is 60 (+${refilled} refilled)`,
        );
        assert.ok(
          [...reasons].some((m) => /workspace/.test(m)),
          'refused for the workspace, not for each key',
        );
        const third = await server.workspace();
        assert.equal(
          (await server.post('/v1/list_keys', {}, (await server.key(third, ['read', 'admin'])).key)).status,
          200,
          'another workspace is unaffected',
        );
      });
    },
  );

  describe(
    `a stream's pages are admitted against the memory budget by their real size, on ${kind}`,
    { skip: skip && 'Postgres unreachable (see notice above)' },
    () => {
      let server: TestServer;
      let ws: string;

      before(async () => {
        server = await startTestServer(await create(), { MEMORY_BUDGET_MB: '8', STREAM_STALL_MS: '6000' });
        ws = await server.workspace();
        // Small events first (the stream's first page), then large ones (its next pages).
        await server.db.transaction((trx) =>
          publish(
            trx,
            ws,
            Array.from({ length: 16 }, (_, i) => sampleEvent('mbx_a', i)),
          ),
        );
        // More than a loopback connection's buffers hold, so a client that stops reading stalls the stream.
        for (let i = 0; i < 20; i++)
          await server.db.transaction((trx) =>
            publish(
              trx,
              ws,
              Array.from({ length: 10 }, (_, j) => largeEvent('mbx_a', i * 10 + j)),
            ),
          );
      });
      after(async () => {
        await server?.stop();
        await server?.database.drop();
      });

      it('holds the memory of a page written to a client that stopped reading, so the workspace cannot read past its share meanwhile', async () => {
        const key = (await server.key(ws, ['read'])).key;
        const { hostname, port } = new URL(server.url);
        const socket: Socket = connect(Number(port), hostname);
        socket.on('error', () => {});
        const body = JSON.stringify({ limit: 16 });
        socket.write(
          `POST ${FEED} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
        // The client never reads: the stream's large pages stall in the socket's buffers.
        socket.pause();
        // Stalled: a large page's memory held for a whole second (between pages it is let go for a moment).
        let heldSince: number | undefined;
        await until(
          'a large page is written and waits to be taken',
          () => {
            if (server.services.memory.used <= 1_000_000) heldSince = undefined;
            else heldSince ??= performance.now();
            return heldSince !== undefined && performance.now() - heldSince > 1000;
          },
          20_000,
        );
        const blocked = await server.post(FEED, { limit: 16 }, key);
        assert.equal(blocked.status, 429, `another read of the workspace waits for the stalled page's memory: ${blocked.status}`);
        socket.destroy();
        await until('the stream is gone and its memory back', () => server.services.memory.used === 0, 10_000);
        assert.equal((await server.post(FEED, { limit: 16 }, key)).status, 200);
      });
    },
  );
}
