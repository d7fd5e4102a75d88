import assert from 'node:assert/strict';
import net from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { RefusalLog } from '../src/front-door/refusal-log.ts';
import { RateLimiter } from '../src/limits/rate-limiter.ts';
import { ApiError } from '../src/base/errors.ts';
import { contractErrors } from './support/contract.ts';
import { databaseKinds, sqliteDatabase } from './support/databases.ts';
import { mcpClient } from './support/mcp.ts';
import { requestFrom, keyLookupsDuring, bigEvent } from './support/edge.ts';
import { startTestServer, type TestServer, serverKnex } from './support/server.ts';
import { until } from './support/wait.ts';

/** A key of a workspace of its own. */
const p = (keyId: string, workspaceId = `ws_of_${keyId}`) => ({ keyId, workspaceId });

describe('token bucket', () => {
  it('allows a burst, then refills at the rate', () => {
    let now = 0;
    const limiter = new RateLimiter(2, 3, () => now);
    assert.deepEqual(
      [1, 2, 3].map(() => limiter.take(p('k'))!.remaining),
      [2, 1, 0],
    );
    assert.throws(
      () => limiter.take(p('k')),
      (err: ApiError) => err.code === 'rate_limited' && err.headers['Retry-After'] === '1',
    );
    now += 500; // one token back
    assert.equal(limiter.take(p('k'))!.remaining, 0);
    assert.throws(() => limiter.take(p('k')));
    assert.equal(limiter.take(p('other'))!.remaining, 2, 'other keys have their own bucket');
  });

  it('is off at 0 per second', () => {
    const limiter = new RateLimiter(0, 1);
    for (let i = 0; i < 100; i++) assert.equal(limiter.take(p('k')), undefined);
    for (let i = 0; i < 100; i++) assert.equal(limiter.takeForAddress('127.0.0.1'), undefined);
  });

  it('charges after the fact: a bucket in debt refuses until it is back above one token, with a Retry-After that says when', () => {
    let now = 0;
    const limiter = new RateLimiter(10, 20, () => now);
    assert.equal(limiter.take(p('k'))!.remaining, 19);
    const charged = limiter.charge(p('k'), 30)!;
    assert.equal(charged.remaining, 0);
    assert.equal(charged.resetSeconds, 4, '-11 tokens: 31 to go at 10/s');
    assert.throws(
      () => limiter.take(p('k')),
      (err: ApiError) => err.code === 'rate_limited' && err.headers['Retry-After'] === '2',
    );
    now += 1100; // -11 + 11 = 0: still short of one token
    assert.throws(() => limiter.take(p('k')));
    now += 200;
    assert.ok(limiter.take(p('k')));
    assert.equal(limiter.take(p('other'))!.remaining, 19, 'other keys keep their own bucket');
  });

  it('prices a response by its size: one token per 64 KiB past the first', () => {
    const limiter = new RateLimiter(100, 200);
    assert.deepEqual(
      [0, 1000, 65_536, 65_537, 131_072, 1_048_576, 1_048_576 + 40_000].map((bytes) => limiter.tokensForBytes(bytes)),
      [0, 0, 0, 1, 1, 15, 16],
    );
  });

  it('with the defaults, holds a key pulling 1 MiB pages to about 6.25 MiB/s while small requests keep 100/s', () => {
    let now = 0;
    const limiter = new RateLimiter(100, 200, () => now);
    const served = { big: 0, small: 0 };
    // Ten simulated seconds, each key asking every millisecond.
    for (; now < 10_000; now += 1) {
      try {
        limiter.take(p('big'));
        limiter.chargeForBytes(p('big'), 1_048_576);
        served.big++;
      } catch {}
      try {
        limiter.take(p('small'));
        limiter.chargeForBytes(p('small'), 2_000);
        served.small++;
      } catch {}
    }
    // The burst (200 tokens) plus 10 s × 100 tokens, at 16 tokens a page, and at 1 a small request.
    assert.ok(served.big <= Math.ceil(1200 / 16) + 1 && served.big >= Math.floor(1200 / 16) - 1, `${served.big} pages of 1 MiB in 10 s`);
    assert.ok(served.small >= 1199 && served.small <= 1201, `${served.small} small requests in 10 s`);
  });

  it('keeps buckets for 100,000 distinct addresses bounded, and forgets full ones', () => {
    let now = 0;
    const frozen = new RateLimiter(100, 200, () => now, { addressPerSecond: 20, addressBurst: 40, maxBuckets: 20_000 });
    for (let i = 0; i < 100_000; i++) frozen.takeForAddress(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    assert.ok(frozen.addresses.size <= 20_000, `${frozen.addresses.size} buckets held with no time passing`);
    // The least recently used went first: the last address still owes its token, the first was forgotten.
    assert.equal(frozen.addresses.state('10.1.134.159').remaining, 39);
    assert.equal(frozen.addresses.state('10.0.0.0').remaining, 40);

    // With time passing (one address per millisecond), buckets refill in 2 s and are swept.
    const flowing = new RateLimiter(100, 200, () => now, { addressPerSecond: 20, addressBurst: 40 });
    for (let i = 0; i < 100_000; i++, now++) flowing.takeForAddress(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    assert.ok(flowing.addresses.size <= 8192, `${flowing.addresses.size} buckets held`);
  });
});

describe('what no key pays for is paid by the client address', async () => {
  for (const { kind, create, skip } of await databaseKinds()) {
    describe(kind, { skip }, () => {
      let server: TestServer;
      let key: string;
      before(async () => {
        server = await startTestServer(await create(), {
          RATE_LIMIT_PER_SECOND: '0.01',
          RATE_LIMIT_BURST: '50',
          RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0.01',
          RATE_LIMIT_PER_ADDRESS_BURST: '5',
        });
        key = (await server.key(await server.workspace(), ['read'])).key;
      });
      after(async () => {
        await server.stop();
        await server.database.drop();
      });

      it('unknown keys: 401 until the address has spent its budget, then 429 without a lookup; other addresses and known keys are unaffected', async () => {
        // The valid key authenticates once from the flooded address, before the flood.
        assert.equal((await requestFrom(server.url, '127.0.0.2', '/v1/event_feed', key)).status, 200);
        const unknown = (i: number) => `efk_01ARZ3NDEKTSV4RRFFQ69G5FA${'V'}_${'x'.repeat(42)}${i % 10}`;
        const statuses: number[] = [];
        let limited: Awaited<ReturnType<typeof requestFrom>> | undefined;
        const lookups = await keyLookupsDuring(serverKnex(server), async () => {
          for (let i = 0; i < 30; i++) {
            const res = await requestFrom(server.url, '127.0.0.2', '/v1/event_feed', unknown(i));
            statuses.push(res.status);
            if (res.status === 429) limited = res;
          }
        });
        assert.deepEqual(statuses, [...Array(5).fill(401), ...Array(25).fill(429)]);
        assert.ok(lookups <= 5, `${lookups} key lookups for 30 unknown keys`);
        assert.equal(limited!.json.error.code, 'rate_limited');
        assert.match(limited!.json.error.message, /from this address/);
        assert.ok(Number(limited!.headers['retry-after']) >= 99, `Retry-After ${limited!.headers['retry-after']}`);
        assert.equal(limited!.headers['ratelimit-remaining'], '0');
        // Missing and malformed keys too.
        assert.equal((await requestFrom(server.url, '127.0.0.2', '/v1/event_feed')).status, 429);
        assert.equal((await requestFrom(server.url, '127.0.0.2', '/v1/event_feed', 'not-a-key')).status, 429);
        // Unauthenticated pages as well; probes never.
        assert.equal((await requestFrom(server.url, '127.0.0.2', '/openapi.json', undefined, 'GET')).status, 429);
        assert.equal((await requestFrom(server.url, '127.0.0.2', '/readyz', undefined, 'GET')).status, 200);
        assert.equal((await requestFrom(server.url, '127.0.0.2', '/healthz', undefined, 'GET')).status, 200);

        assert.equal(
          (await requestFrom(server.url, '127.0.0.2', '/v1/event_feed', key)).status,
          200,
          'a key that authenticated before still works from that address',
        );
        assert.equal(
          (await requestFrom(server.url, '127.0.0.3', '/v1/event_feed', unknown(0))).status,
          401,
          'another address has its own budget',
        );
        assert.equal((await requestFrom(server.url, '127.0.0.3', '/v1/event_feed', key)).status, 200);
      });

      it('a valid key gives back the address token its lookup took: its requests never spend the address budget', async () => {
        const { key: fresh } = await server.key(await server.workspace(), ['read']);
        for (let i = 0; i < 10; i++) assert.equal((await requestFrom(server.url, '127.0.0.4', '/v1/event_feed', fresh)).status, 200);
        const statuses = [];
        for (let i = 0; i < 6; i++)
          statuses.push(
            (await requestFrom(server.url, '127.0.0.4', '/v1/event_feed', `${fresh.slice(0, -1)}${fresh.at(-1) === 'A' ? 'B' : 'A'}`))
              .status,
          );
        assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429], 'the wrong secret of a known key id pays like any unknown key');
      });

      it('/readyz answers every call from at most one query per 100 ms', async () => {
        const started = performance.now();
        const queries = await keyLookupsDuring(
          serverKnex(server),
          async () => {
            const answers = await Promise.all(
              Array.from({ length: 200 }, () => requestFrom(server.url, '127.0.0.5', '/readyz', undefined, 'GET')),
            );
            assert.ok(answers.every((a) => a.status === 200 && a.json.status === 'ready'));
          },
          /select 1/,
        );
        const elapsed = performance.now() - started;
        assert.ok(queries <= 2 + elapsed / 100, `${queries} queries for 200 probes in ${Math.round(elapsed)} ms`);
      });
    });
  }
});

describe('X-Forwarded-For counts only behind trusted proxies (TRUST_PROXY_HOPS)', () => {
  const limits = { RATE_LIMIT_PER_SECOND: '0.01', RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0.01', RATE_LIMIT_PER_ADDRESS_BURST: '2' };
  const flood = async (server: TestServer) => {
    const statuses = [];
    for (let i = 0; i < 6; i++)
      statuses.push(
        (await requestFrom(server.url, '127.0.0.6', '/openapi.json', undefined, 'GET', '', { 'x-forwarded-for': `198.51.100.${i}` }))
          .status,
      );
    return statuses;
  };

  it('by default a client naming itself anew in X-Forwarded-For gets no fresh budget', async () => {
    const server = await startTestServer(await sqliteDatabase(), limits);
    try {
      assert.deepEqual(await flood(server), [200, 200, 429, 429, 429, 429]);
    } finally {
      await server.stop();
      await server.database.drop();
    }
  });

  it('with TRUST_PROXY_HOPS=1 each forwarded client has its own budget', async () => {
    const server = await startTestServer(await sqliteDatabase(), { ...limits, TRUST_PROXY_HOPS: '1' });
    try {
      assert.deepEqual(await flood(server), [200, 200, 200, 200, 200, 200]);
    } finally {
      await server.stop();
      await server.database.drop();
    }
  });
});

describe('a response pays for its size', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '0.01', RATE_LIMIT_BURST: '40' });
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('a key pulling ~1 MB pages is refused after a few, one making small requests after its whole burst, another key not at all', async () => {
    const ws = await server.workspace();
    const writer = (await server.key(ws, ['write'])).key;
    for (let i = 0; i < 20; i++) assert.equal((await server.post('/v1/emit_event', bigEvent(i), writer)).status, 201);
    const big = (await server.key(ws, ['read'])).key;
    const small = (await server.key(ws, ['read'])).key;
    const other = (await server.key(await server.workspace(), ['read'])).key;

    const pull = async (key: string, limit: number) => {
      const served: Array<{ bytes: number; remaining: number }> = [];
      let refused;
      for (let i = 0; i < 60 && !refused; i++) {
        const res = await server.post('/v1/event_feed', { limit }, key);
        if (res.status === 200)
          served.push({ bytes: Buffer.byteLength(res.text), remaining: Number(res.headers.get('ratelimit-remaining')) });
        else refused = res;
      }
      return { served, refused };
    };
    const heavy = await pull(big, 20);
    assert.ok(heavy.served[0]!.bytes > 900_000, `pages of ${heavy.served[0]!.bytes} bytes`);
    const perPage = 1 + Math.ceil((heavy.served[0]!.bytes - 65_536) / 65_536);
    assert.equal(heavy.served.length, Math.ceil(40 / perPage), `${perPage} tokens a page: pages served until the bucket is in debt`);
    assert.equal(heavy.served[0]!.remaining, 40 - perPage, 'RateLimit-Remaining counts the page');
    assert.equal(heavy.refused!.status, 429);
    assert.ok(Number(heavy.refused!.headers.get('retry-after')) > 100, 'in debt: longer than one token takes');

    const light = await pull(small, 1);
    assert.ok(light.served[0]!.bytes < 65_536);
    assert.equal(light.served.length, 40, 'small answers cost one token each');
    assert.equal(light.refused!.status, 429);
    assert.equal((await server.post('/v1/event_feed', { limit: 20 }, other)).status, 200, 'another key is unaffected');
  });
});

describe('rate limiting over HTTP and MCP', () => {
  let server: TestServer;
  let busyKey: string;
  let calmKey: string;
  before(async () => {
    // One token per 100 s: however slow the machine, no token comes back during the test.
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '0.01', RATE_LIMIT_BURST: '5' });
    const ws = await server.workspace();
    busyKey = (await server.key(ws, ['read'])).key;
    calmKey = (await server.key(ws, ['read'])).key;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('answers 429 rate_limited with Retry-After and RateLimit headers, and spares other keys', async () => {
    const statuses: number[] = [];
    let limited;
    for (let i = 0; i < 7; i++) {
      const res = await server.post('/v1/event_feed', {}, busyKey);
      statuses.push(res.status);
      if (res.status === 200) {
        assert.equal(res.headers.get('ratelimit-limit'), '5');
        assert.equal(res.headers.get('ratelimit-remaining'), String(4 - i));
        assert.match(res.headers.get('ratelimit-reset') ?? '', /^\d+$/);
      } else limited = res;
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
    assert.equal(limited!.json.error.code, 'rate_limited');
    assert.equal(contractErrors('Error', limited!.json), null);
    assert.ok(Number(limited!.headers.get('retry-after')) >= 99, `Retry-After ${limited!.headers.get('retry-after')}`);
    assert.equal(limited!.headers.get('ratelimit-remaining'), '0');
    // Bad requests spend the budget too: the limit is taken before the body is read.
    assert.equal((await server.post('/v1/event_feed', '{bad', busyKey)).status, 429);

    assert.equal((await server.post('/v1/event_feed', {}, calmKey)).status, 200, 'another key is unaffected');
  });

  it('limits MCP tool calls from the same bucket, as a rate_limited tool error', async () => {
    const ws = await server.workspace();
    const { key } = await server.key(ws, ['read']);
    // The handshake's two messages (initialize, notifications/initialized) take a token each, like every message.
    const client = await mcpClient(server.url, key);
    const results = [];
    results.push(await client.callTool({ name: 'event_feed', arguments: {} }));
    for (let i = 0; i < 2; i++) assert.equal((await server.post('/v1/event_feed', {}, key)).status, 200);
    const limited = await client.callTool({ name: 'event_feed', arguments: {} });
    await client.close();
    assert.ok(results.every((r) => !r.isError));
    assert.equal(limited.isError, true);
    assert.match((limited.content as any)[0].text, /^rate_limited : too many requests for this key; retry in \d+ s$/);
  });
});

describe('refusals are counted, not logged one by one', () => {
  it('a flood of 429s writes a line for the first 10 of a window only; one line per window says how many', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const server = await startTestServer(
      await sqliteDatabase(),
      { RATE_LIMIT_PER_SECOND: '0.01', RATE_LIMIT_BURST: '2' },
      { log: pino({ level: 'info' }, sink) },
    );
    try {
      const { key } = await server.key(await server.workspace(), ['read']);
      const statuses = [];
      for (let i = 0; i < 30; i++) statuses.push((await server.post('/v1/event_feed', {}, key)).status);
      assert.equal(statuses.filter((s) => s === 429).length, 28);
      const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
      assert.deepEqual(
        requests.map((l) => l.status),
        [200, 200, ...Array<number>(10).fill(429)],
        'the answered requests, and the first 10 refusals of the window',
      );
      for (const line of requests.slice(2))
        assert.deepEqual([line.error_code, line.limit, line.operation], ['rate_limited', 'key', 'event_feed']);
    } finally {
      await server.stop();
      await server.database.drop();
    }

    const warned: Array<Record<string, unknown>> = [];
    const refusals = new RefusalLog(
      pino({ level: 'warn' }, new Writable({ write: (chunk, _e, done) => (warned.push(JSON.parse(String(chunk))), done()) })),
    );
    for (let i = 0; i < 5; i++) refusals.note();
    refusals.flush();
    refusals.flush();
    assert.deepEqual(
      warned.map((w) => [w.msg, w.refused]),
      [['requests refused by rate limits', 5]],
    );
  });
});

describe('a page read reserves what a whole page costs while it runs', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '0.01', RATE_LIMIT_BURST: '200' });
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('with a burst of 200, a key has at most 13 page reads in flight; once answered they cost what they answered', async () => {
    const { key } = await server.key(await server.workspace(), ['read']);
    const { port } = new URL(server.url);
    // Twenty reads whose bodies are held back: each stays in flight, holding its reservation.
    const held = await Promise.all(
      Array.from(
        { length: 20 },
        () =>
          new Promise<{ socket: net.Socket; answer: () => string }>((resolve) => {
            let answer = '';
            const socket = net.connect(Number(port), '127.0.0.1', () => {
              socket.write(
                `POST /v1/event_feed HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"limit":`,
              );
              resolve({ socket, answer: () => answer });
            });
            socket.on('data', (chunk) => (answer += chunk));
            socket.on('error', () => {});
          }),
      ),
    );
    await until('seven refused', () => held.filter((h) => h.answer().startsWith('HTTP/1.1 429')).length === 7, 5000);
    const admitted = held.filter((h) => h.answer() === '');
    assert.equal(admitted.length, 13, '200 tokens, 16 a page read in flight');
    for (const h of admitted) h.socket.write('1}');
    await until('the thirteen answered', () => admitted.every((h) => h.answer().startsWith('HTTP/1.1 200')), 5000);
    for (const h of held) h.socket.destroy();
    // Settled at their size (one token each): the bucket is nearly full again.
    const next = await server.post('/v1/event_feed', {}, key);
    assert.equal(next.status, 200);
    assert.equal(next.headers.get('ratelimit-remaining'), String(200 - 13 - 1));
  });
});
