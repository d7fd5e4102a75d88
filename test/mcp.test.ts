import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { mcpTools } from '../generated/mcp-tools.ts';
import { publish } from '../src/library.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { assertSaysTheContract, mcpClient, rawToolCall } from './support/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`MCP on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let workspace: string;
    let readKey: string;
    let client: Client;

    before(async () => {
      server = await startTestServer(await create());
      workspace = await server.workspace();
      readKey = (await server.key(workspace, ['read'])).key;
      await server.db.transaction((trx) =>
        publish(
          trx,
          workspace,
          Array.from({ length: 12 }, (_, i) => ({ ...sampleEvent(i % 2 ? 'mbx_a' : 'mbx_b', i), type: 'mail.received' })),
        ),
      );
      client = await mcpClient(server.url, readKey);
    });
    after(async () => {
      await client.close();
      await server.stop();
      await server.database.drop();
    });

    it('lists event_feed with the contract schemas and read-only annotations, and no UI', async () => {
      const { tools } = await client.listTools();
      const tool = tools.find((t) => t.name === 'event_feed');
      assert.ok(tool);
      assert.equal(tool.title, 'Flux des événements');
      assert.match(tool.description ?? '', /curseur|after/i);
      assertSaysTheContract(tool, 'EventFeedRequest', 'EventFeedResponse');
      assert.deepEqual(Object.keys(tool.inputSchema.properties ?? {}).sort(), ['after', 'limit']);
      assert.equal(tool.inputSchema.additionalProperties, false);
      assert.deepEqual(
        { ...tool.annotations, title: undefined },
        { title: undefined, readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
      );
      assert.equal(JSON.stringify(tool).includes('ui://'), false);
      assert.deepEqual(tools.map((t) => t.name).sort(), mcpTools.map((t) => t.name).sort());
      // The read operations, and only them: set_webhook, emit_event and the admin reads are not tools.
      assert.deepEqual(tools.map((t) => t.name).sort(), ['event_feed', 'feed_cursor', 'list_events']);
      const listEvents = tools.find((t) => t.name === 'list_events')!;
      assertSaysTheContract(listEvents, 'ListEventsRequest', 'ListEventsResponse');
      assert.deepEqual(
        { ...listEvents.annotations, title: undefined },
        { title: undefined, readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
      );
    });

    it('tools/call answers French text and the exact HTTP response object', async () => {
      let after: string | undefined;
      for (const limit of [5, 5, 5, 5]) {
        const args = after === undefined ? { limit } : { after, limit };
        const http = await server.post('/v1/event_feed', args, readKey);
        const mcp = await client.callTool({ name: 'event_feed', arguments: args });
        assert.equal(mcp.isError, undefined);
        assert.deepEqual(mcp.structuredContent, http.json);
        const text = (mcp.content as Array<{ type: string; text: string }>)[0]!;
        assert.equal(text.type, 'text');
        assert.ok(text.text.includes(http.json.next_cursor), 'the text gives the next cursor');
        if (http.json.events.length === 0) {
          assert.match(text.text, /Aucun nouvel événement : vous êtes à jour/);
        } else {
          assert.match(text.text, new RegExp(`^${http.json.events.length} événements?, `));
          assert.match(text.text, /mail\.received \(message reçu\) : \d+/);
          assert.match(text.text, /\(UTC\)/);
          assert.match(text.text, http.json.events.length < limit ? /Vous êtes à jour/ : /D’autres événements peuvent suivre/);
        }
        after = http.json.next_cursor;
      }
    });

    it('refuses a missing or invalid key with 401 and WWW-Authenticate before any tool runs', async () => {
      const revoked = await server.key(workspace, ['read']);
      await server.revokeKey(revoked.id);
      for (const authorization of [undefined, 'Bearer nope', `Bearer ${revoked.key}`, `Basic ${readKey}`, `Bearer ${readKey} junk`]) {
        const response = await fetch(`${server.url}/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(authorization ? { authorization } : {}),
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        assert.equal(response.status, 401, String(authorization));
        assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer /);
        // The same error body as /v1 answers, so a client handles one shape everywhere.
        const body = await response.json();
        const http = await server.post('/v1/event_feed', {}, authorization?.replace(/^Bearer /, '') ?? '');
        assert.deepEqual(body, { error: { code: 'unauthorized', message: http.json.error.message } });
        assert.equal(contractErrors('Error', body), null);
      }
      await assert.rejects(mcpClient(server.url, 'efk_garbage'));
    });

    it('answers a fault of ours as an internal tool error, as HTTP does, and recovers with the database', async () => {
      await server.db.schema.renameTable('events', 'events_away');
      try {
        const http = await server.post('/v1/event_feed', { limit: 7 }, readKey);
        assert.equal(http.status, 500);
        assert.equal(http.json.error.code, 'internal');
        const mcp = await client.callTool({ name: 'event_feed', arguments: { limit: 7 } });
        assert.equal(mcp.isError, true);
        const text = (mcp.content as any)[0].text as string;
        assert.match(text, /^internal : /);
        // Same generic message, each with its own request id to quote; nothing of the SQL error leaks.
        const withoutId = (message: string) => message.replace(/req_[\w-]+/g, 'req_…');
        assert.equal(withoutId(text), withoutId(`internal : ${http.json.error.message}`));
        assert.doesNotMatch(text, /events_away|no such table|does not exist/);
        assert.equal((mcp._meta as any)['event-feed/error'].code, 'internal');
      } finally {
        await server.db.schema.renameTable('events_away', 'events');
      }
      const recovered = await client.callTool({ name: 'event_feed', arguments: { limit: 7 } });
      assert.equal(recovered.isError, undefined);
    });

    it('answers forbidden, invalid_argument as tool errors the SDK client does not throw on', async () => {
      const noRead = (await server.key(workspace, ['write'])).key;
      const writer = await mcpClient(server.url, noRead);
      const denied = await writer.callTool({ name: 'event_feed', arguments: {} });
      // as over HTTP, the arguments of a key without read are not even validated
      for (const args of [{ limit: 0 }, { foo: 1 }, { after: 'garbage' }]) {
        const http = await server.post('/v1/event_feed', args, noRead);
        assert.equal(http.status, 403, JSON.stringify(args));
        const mcp = await writer.callTool({ name: 'event_feed', arguments: args });
        assert.equal(mcp.isError, true);
        assert.equal((mcp.content as any)[0].text, `forbidden : ${http.json.error.message}`);
      }
      await writer.close();
      assert.equal(denied.isError, true);
      assert.match((denied.content as any)[0].text, /^forbidden : /);
      assert.deepEqual((denied._meta as any)['event-feed/error'].code, 'forbidden');

      const cases: Array<[Record<string, unknown>, string]> = [
        [{ limit: 0 }, 'invalid_argument'],
        [{ unknown: 1 }, 'invalid_argument'],
        [{ after: 'tampered' }, 'invalid_argument'],
      ];
      for (const [args, code] of cases) {
        const http = await server.post('/v1/event_feed', args, readKey);
        const mcp = await client.callTool({ name: 'event_feed', arguments: args });
        assert.equal(mcp.isError, true);
        assert.equal((mcp.content as any)[0].text, `${code} : ${http.json.error.message}`);
      }
      const unknownTool = await client.callTool({ name: 'emit_event', arguments: {} });
      assert.equal(unknownTool.isError, true);
    });

    it('serves only POST on /mcp', async () => {
      for (const method of ['GET', 'DELETE', 'PUT']) {
        const response = await fetch(`${server.url}/mcp`, { method, headers: { authorization: `Bearer ${readKey}` } });
        assert.equal(response.status, 405, method);
        assert.equal(response.headers.get('allow'), 'POST');
      }
    });
  });
}

describe('HTTP and MCP give the same verdict for the same arguments', () => {
  let server: TestServer;
  let keyA: string;
  let cursorA: string;
  let cursorB: string;

  before(async () => {
    const [sqlite] = await databaseKinds();
    server = await startTestServer(await sqlite!.create());
    const a = await server.workspace();
    const b = await server.workspace();
    keyA = (await server.key(a, ['read'])).key;
    const keyB = (await server.key(b, ['read'])).key;
    await server.db.transaction((trx) =>
      publish(
        trx,
        a,
        Array.from({ length: 30 }, (_, i) => sampleEvent('mbx_a', i)),
      ),
    );
    cursorA = (await server.post('/v1/event_feed', { limit: 3 }, keyA)).json.next_cursor;
    cursorB = (await server.post('/v1/event_feed', {}, keyB)).json.next_cursor;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  /** Argument objects as raw JSON text, valid and invalid, including where validators tend to disagree. */
  function corpus(): string[] {
    const limits = [
      '1',
      '2',
      '7',
      '100',
      '499',
      '500',
      '1.0',
      '500.0',
      '1e2',
      '5E1',
      '0',
      '501',
      '-1',
      '1.5',
      '0.999',
      '100.0000001',
      '1e400',
      '-1e400',
      '9007199254740993',
      '1e-400',
      '"10"',
      '"1"',
      '""',
      'null',
      'true',
      'false',
      '[]',
      '[5]',
      '{}',
      '{"n":1}',
    ];
    const flipped = cursorA.slice(0, 10) + (cursorA[10] === 'A' ? 'B' : 'A') + cursorA.slice(11);
    const afters = [
      JSON.stringify(cursorA),
      JSON.stringify(cursorB),
      JSON.stringify(flipped),
      JSON.stringify(cursorA.slice(0, -4)),
      JSON.stringify(`${cursorA}=`),
      JSON.stringify(`${cursorA} `),
      '""',
      '"garbage"',
      '"é€𝄞"',
      JSON.stringify('x'.repeat(513)),
      JSON.stringify('A'.repeat(512)),
      '123',
      '0',
      'null',
      'true',
      '[]',
      '{}',
      JSON.stringify(cursorA.toLowerCase()),
    ];
    const extras = ['"foo":1', '"__proto__":{}', '"constructor":1', '"Limit":5', '"after ":"x"', '"":1', '"limit\\u0000":1'];
    const out = ['{}'];
    for (const limit of limits) out.push(`{"limit":${limit}}`);
    for (const after of afters) out.push(`{"after":${after}}`);
    for (const limit of limits) for (const after of afters.slice(0, 8)) out.push(`{"after":${after},"limit":${limit}}`);
    for (const extra of extras) {
      out.push(`{${extra}}`, `{"limit":5,${extra}}`, `{${extra},"after":${JSON.stringify(cursorA)}}`);
    }
    out.push('{"limit":5,"limit":6}', '{"limit":"5","limit":5}', '{"limit":5,"limit":"5"}');
    return out;
  }

  it('over several hundred argument sets', async () => {
    const cases = corpus();
    assert.ok(cases.length >= 300, `corpus has ${cases.length} cases`);
    let valid = 0;
    for (const args of cases) {
      const http = await server.post('/v1/event_feed', args, keyA);
      const mcp = await rawToolCall(server.url, keyA, 'event_feed', args);
      assert.equal(mcp.status, 200, args);
      const result = mcp.body.result;
      assert.ok(result, `${args}: ${JSON.stringify(mcp.body)}`);
      if (http.status === 200) {
        valid++;
        assert.notEqual(result.isError, true, `${args}: HTTP accepted, MCP refused: ${result.content?.[0]?.text}`);
        assert.deepEqual(result.structuredContent, http.json, args);
      } else {
        assert.notEqual(http.status, 500, args);
        assert.equal(result.isError, true, `${args}: HTTP refused (${http.text}), MCP accepted`);
        assert.deepEqual(result._meta['event-feed/error'], http.json.error, args);
        assert.equal(result.content[0].text, `${http.json.error.code} : ${http.json.error.message}`);
      }
    }
    assert.ok(valid > 20 && valid < cases.length - 100, `a mix of valid (${valid}) and invalid cases`);
  });
});
