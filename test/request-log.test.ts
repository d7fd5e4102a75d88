/**
 * Request log lines (issue 23, part 2): each says what was called (operation; the tool over MCP),
 * by whom (workspace id, key id: never the key), how it ended (status, error code, the limit that
 * refused it), its bytes and duration; a rate-limited request gets its line too (the first few of
 * a window: refusal-log.ts).
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { sqliteDatabase } from './support/databases.ts';
import { rawToolCall } from './support/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('request log lines', () => {
  const lines: Array<Record<string, any>> = [];
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  let server: TestServer;
  let workspace: string;
  let key: { id: string; key: string };
  /** The 'request' line of the response with this request id (pino writes it as the response finishes). */
  const lineOf = async (requestId: string | null) => {
    for (let i = 0; i < 50; i++) {
      const line = lines.find((l) => l.msg === 'request' && l.request_id === requestId);
      if (line) return line;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.fail(`no request line for ${requestId}`);
  };

  before(async () => {
    server = await startTestServer(
      await sqliteDatabase(),
      { RATE_LIMIT_PER_SECOND: '0.01', RATE_LIMIT_BURST: '5' },
      { log: pino({ level: 'info' }, sink) },
    );
    workspace = await server.workspace();
    key = await server.key(workspace, ['read']);
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('names the operation, the workspace and the key id, with status, bytes and duration', async () => {
    const ok = await server.post('/v1/event_feed', {}, key.key);
    assert.equal(ok.status, 200);
    const line = await lineOf(ok.headers.get('x-request-id'));
    assert.equal(line.level, 30, 'info: seen by default');
    assert.equal(line.operation, 'event_feed');
    assert.equal(line.transport, 'http');
    assert.equal(line.workspace_id, workspace);
    assert.equal(line.key_id, key.id);
    assert.equal(line.status, 200);
    assert.equal(line.bytes, Buffer.byteLength(ok.text));
    assert.equal(typeof line.ms, 'number');
    assert.equal(line.error_code, undefined);
  });

  it('names the error code of a failed request', async () => {
    const bad = await server.post('/v1/event_feed', { limit: 0 }, key.key);
    assert.equal(bad.status, 400);
    const line = await lineOf(bad.headers.get('x-request-id'));
    assert.equal(line.error_code, 'invalid_argument');
    assert.equal(line.operation, 'event_feed');
    assert.equal(line.key_id, key.id);
    const unknown = await server.post('/v1/event_feed', {}, 'efk_not_a_key');
    const refused = await lineOf(unknown.headers.get('x-request-id'));
    assert.equal(refused.status, 401);
    assert.equal(refused.error_code, 'unauthorized');
    assert.equal(refused.operation, 'event_feed');
    assert.equal(refused.key_id, undefined);
  });

  it('names the tool of an MCP tools/call, and its error code when it fails', async () => {
    const response = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_events', arguments: { limit: 'x' } } }),
    });
    assert.equal(response.status, 200);
    assert.equal((await response.json()).result.isError, true);
    const line = await lineOf(response.headers.get('x-request-id'));
    assert.equal(line.transport, 'mcp');
    assert.equal(line.tool, 'list_events');
    assert.equal(line.operation, 'list_events');
    assert.equal(line.error_code, 'invalid_argument');
    assert.equal(line.workspace_id, workspace);
    assert.equal(line.key_id, key.id);
    assert.ok(line.bytes > 0);
  });

  it('logs a rate-limited request with the limit that refused it', async () => {
    let refused: Response | undefined;
    for (let i = 0; i < 10 && !refused; i++) {
      const response = await fetch(`${server.url}/v1/feed_cursor`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: '{}',
      });
      if (response.status === 429) refused = response;
      await response.arrayBuffer();
    }
    assert.ok(refused, 'the key ran out of tokens');
    const line = await lineOf(refused.headers.get('x-request-id'));
    assert.equal(line.status, 429);
    assert.equal(line.error_code, 'rate_limited');
    assert.equal(line.limit, 'key');
    assert.equal(line.operation, 'feed_cursor');
    assert.equal(line.key_id, key.id);
    assert.equal(line.workspace_id, workspace);
    // A tool call over the limit is a tool error the model reads, logged like any.
    const tool = await rawToolCall(server.url, key.key, 'event_feed', '{}');
    assert.equal(tool.body.result.isError, true);
    const toolLine = lines.filter((l) => l.msg === 'request' && l.tool === 'event_feed').at(-1);
    assert.equal(toolLine?.error_code, 'rate_limited');
    assert.equal(toolLine?.limit, 'key');
  });

  it('never writes the key itself', () => {
    assert.ok(raw.length > 0);
    // The secret follows the key id (`efk_<id>_<secret>`); it is base64url, which may itself hold
    // `_`, so it is not "what follows the last _" (a few characters that a log line may hold by chance).
    const secret = key.key.slice(`efk_${key.id.slice('key_'.length)}_`.length);
    assert.ok(secret.length >= 40, secret);
    for (const line of raw) {
      assert.ok(!line.includes(key.key), line);
      assert.ok(!line.includes(secret), line);
    }
  });
});
