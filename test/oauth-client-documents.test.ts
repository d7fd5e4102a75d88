/**
 * Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, the MCP
 * specification's preferred registration): a client whose id is the URL of its metadata
 * document, fetched by the service when it first meets it. The fetch follows the service's
 * outbound address policy (as webhooks: https to public addresses only, unless the operator
 * allows insecure targets, which lets this test serve the document from 127.0.0.1 over http),
 * follows no redirect, is bounded in time and size, and is cached; a document that does not
 * describe itself exactly, or asks for what is not served, is refused with invalid_client.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sqliteDatabase } from './support/databases.ts';
import { authorizationUrl, consentWithKey, exchangeCode, mcpFeed, openConsent, pageError, pkce } from './support/oauth.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const REDIRECT = 'http://127.0.0.1:7777/callback';

interface Published {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** Never answers (a stalled server). */
  stall?: boolean;
}

/** Serves documents by path, counting requests per path. */
async function documentServer(): Promise<{ server: Server; url: string; documents: Map<string, Published>; hits: Map<string, number> }> {
  const documents = new Map<string, Published>();
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const doc = documents.get(path);
    if (!doc) return void res.writeHead(404).end();
    if (doc.stall) return;
    const body = typeof doc.body === 'string' ? doc.body : JSON.stringify(doc.body);
    res.writeHead(doc.status ?? 200, { 'content-type': 'application/json', ...doc.headers }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, documents, hits };
}

describe('clients named by their metadata document', () => {
  let insecure: TestServer;
  let strict: TestServer;
  let docs: Awaited<ReturnType<typeof documentServer>>;
  let key: string;
  const clientDoc = (path: string, extra: Record<string, unknown> = {}) => ({
    client_id: `${docs.url}${path}`,
    client_name: 'Assistant publié',
    redirect_uris: [REDIRECT],
    ...extra,
  });

  before(async () => {
    docs = await documentServer();
    const database = await sqliteDatabase();
    insecure = await startTestServer(database, { WEBHOOKS_ALLOW_INSECURE: '1' });
    strict = await startTestServer(database);
    key = (await insecure.key(await insecure.workspace(), ['read'])).key;
  });
  after(async () => {
    await insecure.stop();
    await strict.stop();
    docs.server.close();
    await insecure.database.drop();
  });

  it('fetches the document once, names the client and who publishes it, and issues tokens to it', async () => {
    docs.documents.set('/assistant.json', { body: clientDoc('/assistant.json'), headers: { 'cache-control': 'max-age=300' } });
    const clientId = `${docs.url}/assistant.json`;
    const start = await openConsent(authorizationUrl(insecure.url, { clientId, redirectUri: REDIRECT, challenge: pkce().challenge }));
    assert.equal(start.status, 200, start.text);
    assert.ok(start.text.includes('« Assistant publié »'));
    assert.ok(start.text.includes(`publiée par <strong>${new URL(docs.url).host}</strong>`));
    const { verifier, challenge } = pkce();
    const code = (await consentWithKey(insecure.url, { clientId, redirectUri: REDIRECT, challenge }, key)).searchParams.get('code')!;
    const tokens = await exchangeCode(insecure.url, { clientId, code, verifier, redirectUri: REDIRECT });
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal((await mcpFeed(insecure.url, tokens.json.access_token)).status, 200);
    assert.equal(docs.hits.get('/assistant.json'), 1, 'fetched once, then kept (Cache-Control: max-age=300)');
  });

  it('fetches a no-store document each time', async () => {
    docs.documents.set('/fresh.json', { body: clientDoc('/fresh.json'), headers: { 'cache-control': 'no-store' } });
    for (let i = 0; i < 2; i++)
      assert.equal(
        (await openConsent(authorizationUrl(insecure.url, { clientId: `${docs.url}/fresh.json`, challenge: pkce().challenge }))).status,
        200,
      );
    assert.equal(docs.hits.get('/fresh.json'), 2);
  });

  it('refuses a document that does not describe itself exactly, or asks for what is not served', async () => {
    const cases: Array<[string, Published, RegExp]> = [
      ['/other-id.json', { body: clientDoc('/elsewhere.json') }, /client_id that is not exactly its own URL/],
      ['/no-name.json', { body: { ...clientDoc('/no-name.json'), client_name: undefined } }, /no client_name/],
      ['/secret.json', { body: clientDoc('/secret.json', { client_secret: 'x' }) }, /client secret/],
      ['/jwt.json', { body: clientDoc('/jwt.json', { token_endpoint_auth_method: 'private_key_jwt' }) }, /token_endpoint_auth_method/],
      [
        '/bad-redirect.json',
        { body: clientDoc('/bad-redirect.json', { redirect_uris: ['http://evil.example/cb'] }) },
        /redirect URI refused/,
      ],
      ['/not-json.json', { body: 'not json' }, /not JSON/],
      ['/array.json', { body: [1] }, /not a JSON object/],
      ['/missing.json', { status: 404, body: {} }, /HTTP 404/],
      ['/big.json', { body: { ...clientDoc('/big.json'), padding: 'x'.repeat(70 * 1024) } }, /over 64 KiB/],
    ];
    for (const [path, published, reason] of cases) {
      docs.documents.set(path, published);
      const refused = await openConsent(
        authorizationUrl(insecure.url, { clientId: `${docs.url}${path}`, redirectUri: REDIRECT, challenge: pkce().challenge }),
      );
      assert.equal(refused.status, 400, path);
      assert.equal(pageError(refused).error, 'invalid_client', path);
      assert.match(pageError(refused).error_description ?? '', reason, path);
      assert.equal(refused.headers.get('location'), null, `${path}: never redirected`);
    }
  });

  it('follows no redirect', async () => {
    docs.documents.set('/moved.json', { status: 302, headers: { location: `${docs.url}/target.json` }, body: {} });
    docs.documents.set('/target.json', { body: clientDoc('/moved.json') });
    const refused = await openConsent(authorizationUrl(insecure.url, { clientId: `${docs.url}/moved.json`, challenge: pkce().challenge }));
    assert.equal(refused.status, 400);
    assert.match(pageError(refused).error_description ?? '', /HTTP 302/);
    assert.equal(docs.hits.get('/target.json'), undefined);
  });

  it('refuses a redirect URI the document does not list', async () => {
    docs.documents.set('/listed.json', { body: clientDoc('/listed.json') });
    const refused = await openConsent(
      authorizationUrl(insecure.url, {
        clientId: `${docs.url}/listed.json`,
        redirectUri: 'http://127.0.0.1:7777/other',
        challenge: pkce().challenge,
      }),
    );
    assert.equal(refused.status, 400);
    assert.equal(pageError(refused).error, 'invalid_request');
  });

  it('gives up on a document that does not come within 5 s', async () => {
    docs.documents.set('/stalled.json', { stall: true });
    const started = performance.now();
    const refused = await openConsent(
      authorizationUrl(insecure.url, { clientId: `${docs.url}/stalled.json`, challenge: pkce().challenge }),
    );
    const ms = performance.now() - started;
    assert.equal(refused.status, 400);
    assert.match(pageError(refused).error_description ?? '', /could not be fetched/);
    assert.ok(ms < 8000, `${ms.toFixed(0)} ms`);
  });

  it('by default fetches nothing from a private address or over http (the webhooks’ outbound policy)', async () => {
    docs.documents.set('/private.json', { body: clientDoc('/private.json') });
    for (const clientId of [
      `${docs.url}/private.json`,
      `https://127.0.0.1:${new URL(docs.url).port}/private.json`,
      'https://localhost/client.json',
      'https://[::1]/client.json',
      'https://10.0.0.1/client.json',
    ]) {
      const refused = await openConsent(authorizationUrl(strict.url, { clientId, challenge: pkce().challenge }));
      assert.equal(refused.status, 400, clientId);
      assert.equal(pageError(refused).error, 'invalid_client');
      assert.match(pageError(refused).error_description ?? '', /URL refused/, clientId);
    }
    assert.equal(docs.hits.get('/private.json'), undefined, 'no request was made');
  });
});
