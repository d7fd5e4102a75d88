import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RateLimiter } from '../src/limits/rate-limiter.ts';
import { ApiError } from '../src/errors.ts';
import { contractErrors } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { mcpClient } from './support/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('token bucket', () => {
  it('allows a burst, then refills at the rate', () => {
    let now = 0;
    const limiter = new RateLimiter(2, 3, () => now);
    assert.deepEqual([1, 2, 3].map(() => limiter.take('k')!.remaining), [2, 1, 0]);
    assert.throws(() => limiter.take('k'), (err: ApiError) => err.code === 'rate_limited' && err.headers['Retry-After'] === '1');
    now += 500; // one token back
    assert.equal(limiter.take('k')!.remaining, 0);
    assert.throws(() => limiter.take('k'));
    assert.equal(limiter.take('other')!.remaining, 2, 'other keys have their own bucket');
  });

  it('is off at 0 per second', () => {
    const limiter = new RateLimiter(0, 1);
    for (let i = 0; i < 100; i++) assert.equal(limiter.take('k'), undefined);
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
