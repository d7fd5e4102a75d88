/**
 * MCP 2026-07-28 (stateless) on /mcp, beside the handshake generation: every answer is checked
 * against the revision's official JSON schema (test/fixtures/mcp-schema-2026-07-28), and the wire
 * rules the SDK does not implement yet are held: per-request `_meta`, `resultType`, caching hints,
 * `Mcp-Method`/`Mcp-Name` mirrored headers (-32020), unsupported versions (-32022), removed and
 * unknown methods (404, -32601), and one token of the key's budget per message.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { mcpTools } from '../generated/mcp-tools.ts';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { mcpClient } from './support/mcp.ts';
import { mcpSchemaErrors, statelessPost, validMeta } from './support/mcp-stateless.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

describe('MCP 2026-07-28 (stateless)', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
    const workspace = await server.workspace();
    key = (await server.key(workspace, ['read'])).key;
    await server.db.transaction((trx) =>
      publish(
        trx,
        workspace,
        Array.from({ length: 7 }, (_, i) => sampleEvent('mbx_a', i)),
      ),
    );
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  const post = (method: string, params?: Record<string, unknown>, options?: Parameters<typeof statelessPost>[4]) =>
    statelessPost(server.url, key, method, params, options);

  /** A success as the revision's schema says: the JSON-RPC envelope, then the result as `definition`, complete, with who answered. */
  function assertResult(answer: { status: number; json: any }, definition: string, id: string | number = 1) {
    assert.equal(answer.status, 200, JSON.stringify(answer.json));
    assert.equal(mcpSchemaErrors('JSONRPCResultResponse', answer.json), null);
    assert.equal(answer.json.id, id);
    assert.equal(mcpSchemaErrors(definition, answer.json.result), null);
    assert.equal(answer.json.result.resultType, 'complete');
    assert.deepEqual(Object.keys(answer.json.result._meta[SERVER_INFO_META]).sort(), ['name', 'title', 'version']);
  }

  /** An error as the revision's schema says, with the request's id echoed. */
  function assertError(answer: { status: number; json: any }, status: number, code: number, definition?: string, id: string | number = 1) {
    assert.equal(answer.status, status, JSON.stringify(answer.json));
    assert.equal(mcpSchemaErrors('JSONRPCErrorResponse', answer.json), null);
    if (definition) assert.equal(mcpSchemaErrors(definition, answer.json), null);
    assert.equal(answer.json.error.code, code, answer.json.error.message);
    assert.equal(answer.json.id, id);
  }

  it('server/discover: the versions served (both generations), the tools capability, who answers, caching hints', async () => {
    const answer = await post('server/discover', {});
    assertResult(answer, 'DiscoverResult');
    assert.equal(mcpSchemaErrors('ServerResult', answer.json.result), null);
    const result = answer.json.result;
    assert.deepEqual(result.supportedVersions.slice(0, 3), ['2026-07-28', '2025-11-25', '2025-06-18']);
    assert.deepEqual(result.capabilities, { tools: {} });
    assert.match(result.instructions, /event_feed/);
    assert.ok(Number.isInteger(result.ttlMs) && result.ttlMs > 0);
    assert.equal(result.cacheScope, 'public');
    // clientInfo is a SHOULD: a request without it is served.
    const { 'io.modelcontextprotocol/clientInfo': _info, ...noClientInfo } = validMeta();
    assertResult(await post('server/discover', { _meta: noClientInfo }), 'DiscoverResult');
  });

  it('tools/list: the generated tools, by name, with caching hints; the same tools as the handshake generation lists', async () => {
    const first = await post('tools/list', {}, { id: 'a' });
    assertResult(first, 'ListToolsResult', 'a');
    const { tools, ttlMs, cacheScope } = first.json.result;
    assert.deepEqual(
      tools.map((t: { name: string }) => t.name),
      ['event_feed', 'feed_cursor', 'list_events'],
    );
    for (const tool of tools) {
      assert.equal(mcpSchemaErrors('Tool', tool), null, tool.name);
      assert.deepEqual(
        tool,
        mcpTools.find((t) => t.name === tool.name),
      );
      assert.deepEqual(
        { ...tool!.annotations, title: undefined },
        { title: undefined, readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
      );
    }
    assert.ok(ttlMs > 0 && cacheScope === 'public');
    // Deterministic: byte for byte the same answer every time.
    assert.equal((await post('tools/list', {}, { id: 'a' })).text, first.text);
    const legacy: Client = await mcpClient(server.url, key);
    try {
      assert.deepEqual((await legacy.listTools()).tools, tools);
    } finally {
      await legacy.close();
    }
  });

  it('tools/call: the HTTP answer as structuredContent, French text, resultType; a tool error is a result; an unknown tool -32602', async () => {
    const http = await server.post('/v1/event_feed', { limit: 3 }, key);
    const answer = await post('tools/call', { name: 'event_feed', arguments: { limit: 3 } });
    assertResult(answer, 'CallToolResult');
    assert.deepEqual(answer.json.result.structuredContent, http.json);
    assert.ok(answer.text.includes(`"structuredContent":${http.text}}`), 'the page is spliced as stored, not re-serialized');
    assert.match(answer.json.result.content[0].text, /^3 événements, /);
    assert.equal(answer.json.result.isError, undefined);

    const refused = await post('tools/call', { name: 'event_feed', arguments: { limit: 0 } });
    assertResult(refused, 'CallToolResult');
    assert.equal(refused.json.result.isError, true);
    assert.equal(refused.json.result._meta['event-feed/error'].code, 'invalid_argument');
    assert.match(refused.json.result.content[0].text, /^invalid_argument : /);

    const unknown = await post('tools/call', { name: 'emit_event', arguments: {} });
    assertError(unknown, 200, -32602);
    assert.equal(mcpSchemaErrors('InvalidParamsError', unknown.json.error), null);
    assert.match(unknown.json.error.message, /^Unknown tool: emit_event/);
    for (const params of [{}, { name: 3 }, { arguments: {} }]) {
      const malformed = await post('tools/call', params, { headers: { 'mcp-name': null } });
      assertError(malformed, 200, -32602);
      assert.match(malformed.json.error.message, /^Invalid params: params\.name/);
    }
  });

  it('a request without its _meta, its protocol version or the client capabilities: 400 and -32602', async () => {
    const { 'io.modelcontextprotocol/protocolVersion': _v, ...noVersion } = validMeta();
    const { 'io.modelcontextprotocol/clientCapabilities': _c, ...noCapabilities } = validMeta();
    const cases: Array<Record<string, unknown> | undefined> = [
      undefined,
      { _meta: undefined },
      { _meta: noVersion },
      { _meta: noCapabilities },
      { _meta: { ...validMeta(), 'io.modelcontextprotocol/protocolVersion': 7 } },
      { _meta: 'x' },
    ];
    for (const params of cases) {
      const answer = await post('server/discover', params, { id: 'm' });
      assertError(answer, 400, -32602, undefined, 'm');
      assert.match(answer.json.error.message, /^Invalid params: params\._meta/, JSON.stringify(params));
    }
  });

  it('headers that do not say what the body says: 400 and -32020 (HeaderMismatch)', async () => {
    const cases: Array<[string, Record<string, unknown>, Record<string, string | null>]> = [
      ['server/discover', { _meta: validMeta('9999-01-01') }, { 'mcp-protocol-version': '2026-07-28' }],
      ['server/discover', {}, { 'mcp-protocol-version': null }],
      ['server/discover', {}, { 'mcp-method': null }],
      ['tools/list', {}, { 'mcp-method': 'server/discover' }],
      ['tools/call', { name: 'event_feed', arguments: {} }, { 'mcp-name': null }],
      ['tools/call', { name: 'event_feed', arguments: {} }, { 'mcp-name': 'list_events' }],
      ['tools/call', { name: 'event_feed', arguments: {} }, { 'mcp-name': '=?base64?bGlzdF9ldmVudHM=?=' }],
      ['tools/call', { name: 'event_feed', arguments: {} }, { 'mcp-name': '=?base64?not base64?=' }],
    ];
    for (const [method, params, headers] of cases) {
      const answer = await post(method, params, { headers });
      assertError(answer, 400, -32020, 'HeaderMismatchError');
      assert.match(answer.json.error.message, /^Header mismatch: /, `${method} ${JSON.stringify(headers)}`);
    }
    // A name carried Base64-encoded, as clients must for names outside plain ASCII, is decoded first.
    const encoded = await post(
      'tools/call',
      { name: 'event_feed', arguments: { limit: 1 } },
      { headers: { 'mcp-name': `=?base64?${Buffer.from('event_feed').toString('base64')}?=` } },
    );
    assertResult(encoded, 'CallToolResult');
  });

  it('a version it does not serve: 400 and -32022 with the versions it does, and the one asked', async () => {
    const answer = await post('tools/list', { _meta: validMeta('2027-01-01') }, { id: 9 });
    assertError(answer, 400, -32022, 'UnsupportedProtocolVersionError', 9);
    assert.deepEqual(answer.json.error.data, {
      supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'],
      requested: '2027-01-01',
    });
    const discovered = (await post('server/discover', {})).json.result.supportedVersions;
    assert.deepEqual(answer.json.error.data.supported, discovered);
  });

  it('methods 2026-07-28 removed, and unknown ones: 404 and -32601', async () => {
    for (const method of [
      'initialize',
      'ping',
      'logging/setLevel',
      'resources/subscribe',
      'resources/unsubscribe',
      'prompts/list',
      'resources/list',
      'completion/complete',
      'subscriptions/listen',
      'no/such',
    ]) {
      const answer = await post(method, {}, { id: method });
      assertError(answer, 404, -32601, undefined, method);
      assert.equal(mcpSchemaErrors('MethodNotFoundError', answer.json.error), null);
      assert.match(answer.json.error.message, /^Method not found: /);
    }
    assert.match((await post('ping', {}, { id: 'ping' })).json.error.message, /removed in MCP 2026-07-28/);
  });

  it('a notification is accepted (202, no body); a response sent by the client is refused', async () => {
    const notification = await post('notifications/cancelled', { requestId: 1, _meta: validMeta() }, { id: null });
    assert.equal(notification.status, 202);
    assert.equal(notification.text, '');
    const response = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, result: {} }),
    });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as any).error.code, -32600);
  });

  it('the SDK client of the handshake generation still negotiates 2025-11-25 on the same endpoint', async () => {
    const legacy = await mcpClient(server.url, key);
    try {
      assert.equal((legacy.transport as unknown as { protocolVersion?: string }).protocolVersion, '2025-11-25');
      const result = await legacy.callTool({ name: 'event_feed', arguments: { limit: 2 } });
      assert.equal(result.isError, undefined);
      assert.equal((result as { resultType?: string }).resultType, undefined, 'no 2026-07-28 field in a 2025-11-25 result');
    } finally {
      await legacy.close();
    }
  });
});

describe('MCP 2026-07-28 messages pay for themselves', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    // One token per 100 s: none comes back during the test.
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '0.01', RATE_LIMIT_BURST: '6' });
    key = (await server.key(await server.workspace(), ['read'])).key;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('one token per message, whatever it is; past the budget, 429 with the request id, a tool call a rate_limited tool error', async () => {
    const post = (method: string, params?: Record<string, unknown>, options?: Parameters<typeof statelessPost>[4]) =>
      statelessPost(server.url, key, method, params, options);
    assert.equal((await post('server/discover', {})).status, 200);
    assert.equal((await post('tools/list', {})).status, 200);
    assert.equal((await post('ping', {})).status, 404);
    assert.equal((await post('server/discover', { _meta: validMeta('2027-01-01') })).status, 400);
    assert.equal((await post('tools/call', { name: 'nope', arguments: {} })).json.error.code, -32602);
    assert.equal((await post('tools/call', { name: 'event_feed', arguments: {} })).json.result.isError, undefined);
    const refused = await post('tools/list', {}, { id: 'late' });
    assert.equal(refused.status, 429);
    assert.equal(refused.json.id, 'late');
    assert.match(refused.json.error.message, /^rate_limited: /);
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    const tool = await post('tools/call', { name: 'event_feed', arguments: {} });
    assert.equal(tool.status, 200);
    assert.equal(tool.json.result.isError, true);
    assert.equal(tool.json.result._meta['event-feed/error'].code, 'rate_limited');
    assert.equal(tool.json.result.resultType, 'complete');
  });
});
