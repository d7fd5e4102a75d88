/**
 * /mcp and browsers (MCP Streamable HTTP, "Security": servers MUST validate Origin and answer 403
 * to an invalid one, against DNS rebinding): a request from an origin that is neither the
 * deployment's own nor listed in MCP_ALLOWED_ORIGINS is refused before anything else is read (its
 * key is not looked up, its body not parsed, nothing is charged); requests without Origin are
 * served as before.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/app/config.ts';
import { sqliteDatabase } from './support/databases.ts';
import { statelessHeaders, validMeta } from './support/mcp-stateless.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const LIST_TOOLS = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });

/** A POST to /mcp with any Host and Origin (fetch will not send another Host than the URL's). */
function post(server: TestServer, headers: Record<string, string>, body = LIST_TOOLS, method = 'POST') {
  const url = new URL(`${server.url}/mcp`);
  return new Promise<{ status: number; json: any }>((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('MCP and the Origin header', () => {
  let server: TestServer;
  let key: string;
  let host: string;
  before(async () => {
    // Two tokens per key and five per address, none refilled during the test: a refusal that cost one would show.
    server = await startTestServer(await sqliteDatabase(), {
      RATE_LIMIT_PER_SECOND: '0.01',
      RATE_LIMIT_BURST: '2',
      RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0.01',
      RATE_LIMIT_PER_ADDRESS_BURST: '5',
    });
    key = (await server.key(await server.workspace(), ['read'])).key;
    host = new URL(server.url).host;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('a foreign origin gets 403 before authentication, the body and the method are looked at, and costs no token', async () => {
    const foreign: Array<Record<string, string>> = [
      { origin: 'http://evil.example.com' },
      // DNS rebinding: the browser believes it talks to the attacker's name, so Host and Origin agree.
      { origin: 'http://evil.example.com', host: 'evil.example.com' },
      { origin: `http://evil.example.com:${new URL(server.url).port}`, host: `evil.example.com:${new URL(server.url).port}` },
      { origin: 'null' },
      { origin: `http://127.0.0.1:1` },
      { origin: `https://${host}/path` },
    ];
    for (const headers of foreign) {
      for (const authorization of [undefined, 'Bearer nope', `Bearer ${key}`]) {
        for (const [method, body] of [
          ['POST', LIST_TOOLS],
          ['POST', '{not json'],
          ['GET', ''],
          ['DELETE', ''],
        ] as const) {
          const answer = await post(server, { ...headers, ...(authorization ? { authorization } : {}) }, body, method);
          const where = `${method} ${JSON.stringify(headers)} ${authorization} ${body}`;
          assert.equal(answer.status, 403, where);
          assert.equal(answer.json.jsonrpc, '2.0', where);
          assert.equal('id' in answer.json, false, where);
          assert.match(answer.json.error.message, /^Forbidden: .*MCP_ALLOWED_ORIGINS/, where);
        }
      }
    }
    // None of those 216 refusals took a token of the key (2) or of the address (5).
    for (let i = 0; i < 2; i++) assert.equal((await post(server, { authorization: `Bearer ${key}` })).status, 200);
    for (let i = 0; i < 4; i++) assert.equal((await post(server, { authorization: 'Bearer nope' })).status, 401);
  });
});

describe('MCP origins that are allowed', () => {
  let server: TestServer;
  let key: string;
  let port: string;
  before(async () => {
    server = await startTestServer(await sqliteDatabase(), { MCP_ALLOWED_ORIGINS: ' https://App.Example.com , http://localhost:6274' });
    key = (await server.key(await server.workspace(), ['read'])).key;
    port = new URL(server.url).port;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('no Origin (assistants, the SDK, curl): served as before, its key deciding', async () => {
    assert.equal((await post(server, { authorization: `Bearer ${key}` })).status, 200);
    assert.equal((await post(server, {})).status, 401);
  });

  it('the deployment itself at an address or localhost, and the listed origins, in both protocol generations', async () => {
    const allowed: Array<Record<string, string>> = [
      { origin: server.url },
      { origin: `http://localhost:${port}`, host: `localhost:${port}` },
      { origin: `http://[::1]:${port}`, host: `[::1]:${port}` },
      { origin: `http://10.1.2.3`, host: '10.1.2.3' },
      { origin: 'https://app.example.com' },
      { origin: 'https://app.example.com', host: 'evil.example.com' },
      { origin: 'http://localhost:6274' },
    ];
    const discover = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: validMeta() } });
    for (const headers of allowed) {
      const handshake = await post(server, { ...headers, authorization: `Bearer ${key}` });
      assert.equal(handshake.status, 200, JSON.stringify(headers));
      assert.equal(handshake.json.result.tools.length, 3);
      const stateless = await post(server, { ...headers, ...statelessHeaders(key, 'server/discover', { _meta: validMeta() }) }, discover);
      assert.equal(stateless.status, 200, JSON.stringify(headers));
      assert.equal(stateless.json.result.resultType, 'complete');
      // Allowed is not authenticated.
      assert.equal((await post(server, headers)).status, 401, JSON.stringify(headers));
    }
    // A DNS name is the deployment's own only when listed: otherwise it may be a rebinding page's.
    assert.equal(
      (await post(server, { origin: 'https://events.example.com', host: 'events.example.com', authorization: `Bearer ${key}` })).status,
      403,
    );
    assert.equal(
      (await post(server, { origin: 'http://app.example.com', authorization: `Bearer ${key}` })).status,
      403,
      'the scheme is part of the origin',
    );
  });

  it("the deployment's own host under another scheme is another origin (issue 41 #7): https://host is refused by an http service", async () => {
    for (const headers of [
      { origin: `https://127.0.0.1:${port}`, host: `127.0.0.1:${port}` },
      { origin: `https://localhost:${port}`, host: `localhost:${port}` },
      { origin: 'https://10.1.2.3', host: '10.1.2.3' },
    ])
      assert.equal((await post(server, { ...headers, authorization: `Bearer ${key}` })).status, 403, JSON.stringify(headers));
  });

  it('MCP_ALLOWED_ORIGINS takes origins only: anything else stops the service at start', () => {
    assert.deepEqual(loadConfig({ MCP_ALLOWED_ORIGINS: 'https://a.example, http://b.example:8080/' }).mcpAllowedOrigins, [
      'https://a.example',
      'http://b.example:8080',
    ]);
    assert.deepEqual(loadConfig({}).mcpAllowedOrigins, []);
    for (const bad of [
      'app.example.com',
      'https://a.example/path',
      'ftp://a.example',
      '*',
      'https://a.example?x=1',
      'https://user@a.example',
    ]) {
      assert.throws(
        () => loadConfig({ MCP_ALLOWED_ORIGINS: bad }),
        (err: Error) => err instanceof ConfigError && /MCP_ALLOWED_ORIGINS/.test(err.message),
        bad,
      );
    }
  });
});
