/**
 * MCP costs what HTTP costs: one message per request (no JSON-RPC batches), every message paid
 * from the key's rate budget, clean errors for malformed calls, and tool answers spliced from the
 * stored bytes, described from facts read with the page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { largeEvent, sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const HEADERS = (key: string) => ({
  authorization: `Bearer ${key}`,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
});

async function mcp(server: TestServer, key: string, body: unknown) {
  const response = await fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: HEADERS(key),
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: text ? JSON.parse(text) : undefined };
}

const call = (id: number | string, name: unknown, args: unknown = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe('MCP messages, one at a time', () => {
  let server: TestServer;
  let key: string;
  let ws: string;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
    ws = await server.workspace();
    key = (await server.key(ws, ['read'])).key;
    await server.db.transaction((trx) =>
      publish(
        trx,
        ws,
        Array.from({ length: 5 }, (_, i) => sampleEvent('mbx_a', i)),
      ),
    );
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('a JSON-RPC batch is refused with a clear error, whatever it holds', async () => {
    for (const batch of [
      [call(1, 'event_feed')],
      Array.from({ length: 100 }, (_, i) => call(i, 'event_feed', { limit: 500 })),
      [{ jsonrpc: '2.0', id: 1, method: 'ping' }],
    ]) {
      const res = await mcp(server, key, batch);
      assert.equal(res.status, 400, res.text.slice(0, 200));
      assert.equal(res.json.error.code, -32600);
      assert.match(res.json.error.message, /batch/i);
      // No request id to echo: MCP's schema has the error without `id` (never `id: null`).
      assert.equal('id' in res.json, false);
    }
  });

  it('tools/call without a tool name is an invalid-params error that says so, not an internal error', async () => {
    for (const params of [{}, { name: 3 }, { arguments: { limit: 1 } }, { name: '' }]) {
      const res = await mcp(server, key, { jsonrpc: '2.0', id: 7, method: 'tools/call', params });
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.json).sort(), ['error', 'id', 'jsonrpc']);
      assert.equal(res.json.id, 7);
      assert.equal(res.json.error.code, -32602, res.text);
      assert.match(res.json.error.message, /^Invalid params: params\.name/);
    }
    const noParams = await mcp(server, key, { jsonrpc: '2.0', id: 8, method: 'tools/call' });
    assert.equal(noParams.json.error.code, -32602);
  });

  it('a malformed initialize, ping or tools/list is invalid params (-32602) in words, never an internal error with a schema dump', async () => {
    const cases: Array<[string, unknown]> = [
      ['initialize', {}],
      ['initialize', []],
      ['initialize', { protocolVersion: 20251125, capabilities: {}, clientInfo: { name: 'x', version: '1' } }],
      ['initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x' } }],
      ['ping', 'now'],
      ['tools/list', { cursor: 3 }],
    ];
    for (const [method, params] of cases) {
      const res = await mcp(server, key, { jsonrpc: '2.0', id: 3, method, params });
      const where = `${method} ${JSON.stringify(params)} → ${res.text}`;
      assert.equal(res.status, 200, where);
      assert.deepEqual(Object.keys(res.json).sort(), ['error', 'id', 'jsonrpc'], where);
      assert.equal(res.json.id, 3);
      assert.equal(res.json.error.code, -32602, where);
      assert.match(res.json.error.message, new RegExp(`^Invalid params: ${method} takes .*; wrong or missing: params`), where);
      // The schema library's issue list (`"code":"invalid_type"`, `"expected":…`) is no message for a client.
      assert.doesNotMatch(res.json.error.message, /invalid_type|"code"|"expected"|"path"/, where);
    }
    const fine = await mcp(server, key, {
      jsonrpc: '2.0',
      id: 4,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    assert.equal(fine.json.result.protocolVersion, '2025-11-25');
  });

  it('the tool answer carries the HTTP answer byte for byte, and the same ids', async () => {
    const http = await server.post('/v1/event_feed', { limit: 3 }, key);
    const res = await mcp(server, key, call('abc', 'event_feed', { limit: 3 }));
    assert.equal(res.json.id, 'abc');
    assert.ok(res.text.includes(`"structuredContent":${http.text}}`), 'structuredContent is the HTTP body');
    assert.deepEqual(res.json.result.structuredContent, http.json);
    assert.match(res.json.result.content[0].text, /^3 événements, /);
  });
});

describe('MCP messages pay for themselves', () => {
  let server: TestServer;
  let key: string;
  let other: string;
  before(async () => {
    // One token per 100 s: none comes back during the test.
    server = await startTestServer(await sqliteDatabase(), {
      RATE_LIMIT_PER_SECOND: '0.01',
      RATE_LIMIT_BURST: '5',
      RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0.01',
      RATE_LIMIT_PER_ADDRESS_BURST: '5',
    });
    const ws = await server.workspace();
    key = (await server.key(ws, ['read'])).key;
    other = (await server.key(ws, ['read'])).key;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('tools/list, ping and initialize take a token each, like tools/call and HTTP requests', async () => {
    const statuses: number[] = [];
    for (const method of ['tools/list', 'ping', 'tools/list', 'ping', 'tools/list', 'tools/list', 'ping']) {
      statuses.push((await mcp(server, key, { jsonrpc: '2.0', id: 1, method })).status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429]);
    const batch = await mcp(server, key, [{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    assert.equal(batch.status, 429, 'a refused batch pays its token like any request');
    const limited = await mcp(server, key, { jsonrpc: '2.0', id: 9, method: 'tools/list' });
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.match(limited.json.error.message, /^rate_limited: /);
    assert.equal((await server.post('/v1/event_feed', {}, key)).status, 429, 'the same bucket as HTTP');
    assert.equal((await mcp(server, other, { jsonrpc: '2.0', id: 1, method: 'tools/list' })).status, 200, 'another key is unaffected');
  });

  it('a tools/call of the handshake generation refused before it runs (an Accept without text/event-stream) pays its token like the stateless one', async () => {
    const third = (await server.key(await server.workspace(), ['read'])).key;
    const refused = async () =>
      (
        await fetch(`${server.url}/mcp`, {
          method: 'POST',
          headers: { ...HEADERS(third), accept: 'application/json' },
          body: JSON.stringify(call(1, 'event_feed')),
        })
      ).status;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push(await refused());
    assert.deepEqual(statuses, [406, 406, 406, 406, 406, 429], 'each refused message took one of the burst of 5');
  });

  it("requests with unknown, missing or malformed keys are paid by the client's address: 401, then 429 without a lookup", async () => {
    const statuses: number[] = [];
    const unknown = 'efk_01M7Z2GFMXTKJ34K0R1E1X1QBB_' + 'x'.repeat(43);
    for (const authorization of [
      `Bearer ${unknown}`,
      undefined,
      'Bearer',
      `Bearer ${unknown}`,
      `Basic abc`,
      `Bearer ${unknown}`,
      `Bearer ${unknown}`,
      `Bearer ${unknown}`,
    ]) {
      const response = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(authorization ? { authorization } : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      await response.arrayBuffer();
      statuses.push(response.status);
      if (response.status === 401) assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429, 429]);
    assert.equal(
      (await mcp(server, other, { jsonrpc: '2.0', id: 1, method: 'ping' })).status,
      200,
      'a valid key that authenticated before is unaffected',
    );
  });
});

describe('MCP text of a page cut at the byte cap', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
    const ws = await server.workspace();
    key = (await server.key(ws, ['read'])).key;
    for (let batch = 0; batch < 2; batch++) {
      await server.db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 20 }, (_, i) => largeEvent('mbx_a', batch * 20 + i)),
        ),
      );
    }
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('says more may follow, not that the reader is caught up', async () => {
    const res = await mcp(server, key, call(1, 'event_feed', { limit: 500 }));
    const page = res.json.result.structuredContent;
    assert.ok(page.events.length > 0 && page.events.length < 40, `${page.events.length} events`);
    assert.match(res.json.result.content[0].text, /D’autres événements peuvent suivre/);
    assert.doesNotMatch(res.json.result.content[0].text, /à jour/);
  });
});
