/**
 * OAuth 2.1 for MCP assistants (issue 32, part 4), over HTTP as an assistant and a browser would
 * send it, on both databases: the metadata and the 401's challenge, dynamic registration, the
 * consent form (its CSRF binding, the key's rights), the code exchanged with its verifier, the
 * MCP tool called with the token (a restricted key's token reads only its mailboxes), refresh
 * with rotation (a reused refresh token revokes the family), revocation of the token (RFC 7009)
 * and of the key, and every refusal the specification asks for: a reused code, a wrong verifier,
 * a wrong redirect_uri, a wrong resource, an expired token, an OAuth token on /v1. Secrets never
 * appear in a log line. The browser (Chromium) and the SDK client's own OAuth are in
 * oauth-browser.test.ts; client metadata documents in oauth-client-documents.test.ts; two
 * instances in oauth-instances.test.ts.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import {
  authorizationUrl,
  consentWithKey,
  exchangeCode,
  mcpFeed,
  openConsent,
  pkce,
  postConsent,
  postForm,
  redirectedTo,
  refresh,
  register,
  registeredClient,
  tokensFor,
} from './support/oauth.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const REDIRECT = 'http://127.0.0.1:7777/callback';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`OAuth for MCP assistants on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let base: string;
    let workspace: string;
    let readKey: { id: string; key: string };
    let restrictedKey: { id: string; key: string };
    let adminKey: string;
    const logLines: string[] = [];

    before(async () => {
      const sink = new Writable({ write: (chunk, _encoding, done) => void (logLines.push(String(chunk)), done()) });
      server = await startTestServer(await create(), {}, { log: pino({ level: 'info' }, sink) });
      base = server.url;
      workspace = await server.workspace({ name: 'Atelier Dupont' });
      readKey = await server.key(workspace, ['read']);
      restrictedKey = await server.key(workspace, ['read'], ['mbx_ventes']);
      adminKey = (await server.key(workspace, ['read', 'admin'])).key;
      await server.db.transaction((trx) =>
        publish(
          trx,
          workspace,
          Array.from({ length: 10 }, (_, i) => sampleEvent(i % 2 ? 'mbx_ventes' : 'mbx_support', i)),
        ),
      );
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    describe('discovery', () => {
      it('/mcp answers 401 with resource_metadata and the scope in its challenge', async () => {
        for (const headers of [{}, { authorization: 'Bearer efo_not-a-token' }] as Array<Record<string, string>>) {
          const response = await fetch(`${base}/mcp`, {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
            body: '{}',
          });
          assert.equal(response.status, 401);
          const challenge = response.headers.get('www-authenticate') ?? '';
          assert.match(challenge, /^Bearer /);
          assert.ok(challenge.includes(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`), challenge);
          assert.ok(challenge.includes('scope="read"'), challenge);
        }
      });

      it('serves protected resource metadata (RFC 9728) at the path-suffixed and the root well-known URIs', async () => {
        for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
          const response = await fetch(base + path);
          assert.equal(response.status, 200, path);
          assert.match(response.headers.get('content-type') ?? '', /application\/json/);
          assert.equal(response.headers.get('access-control-allow-origin'), '*', 'readable by browser-based clients');
          const metadata = (await response.json()) as any;
          assert.equal(metadata.resource, `${base}/mcp`);
          assert.deepEqual(metadata.authorization_servers, [`${base}/`]);
          assert.deepEqual(metadata.scopes_supported, ['read']);
        }
      });

      it('serves authorization server metadata (RFC 8414) whose issuer is the one the resource names', async () => {
        const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as any;
        assert.equal(metadata.issuer, `${base}/`);
        assert.equal(metadata.authorization_endpoint, `${base}/authorize`);
        assert.equal(metadata.token_endpoint, `${base}/token`);
        assert.equal(metadata.registration_endpoint, `${base}/register`);
        assert.equal(metadata.revocation_endpoint, `${base}/revoke`);
        assert.deepEqual(metadata.code_challenge_methods_supported, ['S256']);
        assert.deepEqual(metadata.response_types_supported, ['code']);
        assert.deepEqual(metadata.grant_types_supported, ['authorization_code', 'refresh_token']);
        assert.deepEqual(metadata.token_endpoint_auth_methods_supported, ['none']);
        assert.equal(metadata.client_id_metadata_document_supported, true);
        assert.equal(metadata.authorization_response_iss_parameter_supported, true);
      });
    });

    describe('dynamic client registration (RFC 7591)', () => {
      it('registers a public client, even one that asked for a secret', async () => {
        const registered = await register(base, {
          redirect_uris: [REDIRECT],
          client_name: 'Assistant',
          token_endpoint_auth_method: 'client_secret_post',
        });
        assert.equal(registered.status, 201, registered.text);
        assert.equal(registered.json.token_endpoint_auth_method, 'none');
        assert.equal(registered.json.client_secret, undefined);
        assert.deepEqual(registered.json.redirect_uris, [REDIRECT]);
        assert.match(registered.json.client_id, /^[0-9a-f-]{36}$/);
      });

      it('refuses redirect URIs that are neither https nor loopback, with a fragment, or too many', async () => {
        for (const uris of [
          ['http://assistant.example/cb'],
          ['javascript:alert(1)'],
          ['https://assistant.example/cb#x'],
          ['data:text/html,x'],
          [],
          Array.from({ length: 11 }, (_, i) => `https://a.example/${i}`),
        ]) {
          const refused = await register(base, { redirect_uris: uris, client_name: 'x' });
          assert.equal(refused.status, 400, `${JSON.stringify(uris)}: ${refused.text}`);
          assert.match(refused.json.error, /^invalid_(redirect_uri|client_metadata)$/);
        }
        for (const uri of ['https://assistant.example/cb', 'http://localhost:1234/cb', 'http://[::1]/cb', 'com.example.assistant:/oauth']) {
          assert.equal((await register(base, { redirect_uris: [uri] })).status, 201, uri);
        }
      });

      it('answers bad bodies with 400 and an OAuth error, never 500', async () => {
        const bodies: Array<[string, string]> = [
          ['application/json', '{'],
          ['application/json', '[]'],
          ['application/json', 'null'],
          ['text/plain', 'redirect_uris=x'],
          ['application/json', JSON.stringify({ redirect_uris: 'https://a.example/cb' })],
          ['application/json', JSON.stringify({ redirect_uris: ['https://a.example/cb'], grant_types: ['client_credentials'] })],
          ['application/json', JSON.stringify({ redirect_uris: ['x'.repeat(20_000)] })],
        ];
        for (const [type, body] of bodies) {
          const response = await fetch(`${base}/register`, { method: 'POST', headers: { 'content-type': type }, body });
          assert.ok([400, 413].includes(response.status), `${body.slice(0, 60)}: ${response.status}`);
          assert.ok(typeof ((await response.json()) as any).error === 'string');
        }
      });
    });

    describe('authorization and consent', () => {
      it('shows a French page naming the client and its redirect host, with the key field, unframeable, uncached', async () => {
        const clientId = await registeredClient(base, REDIRECT, 'Claude <script>');
        const start = await openConsent(
          authorizationUrl(base, { clientId, redirectUri: REDIRECT, challenge: pkce().challenge, state: 's', resource: `${base}/mcp` }),
        );
        assert.equal(start.status, 200);
        assert.match(start.text, /<html lang="fr">/);
        assert.ok(start.text.includes('« Claude &lt;script&gt; »'), 'the client named, escaped');
        assert.ok(start.text.includes('<strong>127.0.0.1:7777</strong>'), 'the redirect host named');
        assert.match(start.text, /votre propre ordinateur/, 'a loopback redirect is warned about');
        assert.match(start.text, /type="password" id="api_key"/);
        assert.ok(start.handle);
        assert.match(start.cookie ?? '', /^ef_oauth_browser=/);
        assert.match(start.headers.get('set-cookie') ?? '', /HttpOnly; SameSite=Strict/);
        const csp = start.headers.get('content-security-policy') ?? '';
        assert.match(csp, /frame-ancestors 'none'/);
        assert.match(csp, /default-src 'none'/);
        assert.equal(start.headers.get('x-frame-options'), 'DENY');
        assert.equal(start.headers.get('cache-control'), 'no-store');
      });

      it('checks the key, shows its workspace and mailboxes before consent, then redirects with code, state and iss', async () => {
        const clientId = await registeredClient(base);
        const start = await openConsent(
          authorizationUrl(base, {
            clientId,
            redirectUri: REDIRECT,
            challenge: pkce().challenge,
            state: 'état 1',
            resource: `${base}/mcp`,
          }),
        );
        const checked = await postConsent(base, start, { action: 'check', api_key: restrictedKey.key });
        assert.equal(checked.status, 200, checked.text);
        assert.ok(checked.text.includes('« Atelier Dupont »'), 'the workspace by name');
        assert.ok(checked.text.includes(workspace));
        assert.ok(checked.text.includes('<code>mbx_ventes</code>'), 'the mailboxes it is restricted to');
        assert.match(checked.text, /seulement/);
        assert.ok(!checked.text.includes(restrictedKey.key), 'the key is never put back in a page');
        const allowed = await postConsent(base, start, { action: 'allow' });
        assert.equal(allowed.status, 303);
        const back = redirectedTo(allowed);
        assert.equal(`${back.origin}${back.pathname}`, REDIRECT);
        assert.match(back.searchParams.get('code') ?? '', /^efc_/);
        assert.equal(back.searchParams.get('state'), 'état 1');
        assert.equal(back.searchParams.get('iss'), `${base}/`);
        assert.ok(!back.href.includes(restrictedKey.key));
        // The same form again gives no second code.
        assert.equal((await postConsent(base, start, { action: 'allow' })).status, 400);
      });

      it('refuses a wrong key, a key without read, and after five refusals the request itself', async () => {
        const noRead = await server.key(workspace, ['write']);
        const clientId = await registeredClient(base);
        const start = await openConsent(authorizationUrl(base, { clientId, challenge: pkce().challenge }));
        const wrong = await postConsent(base, start, { action: 'check', api_key: `${readKey.key.slice(0, -2)}xx` });
        assert.equal(wrong.status, 400);
        assert.match(wrong.text, /Clé refusée/);
        const writeOnly = await postConsent(base, start, { action: 'check', api_key: noRead.key });
        assert.match(writeOnly.text, /n’a pas le droit read/);
        assert.equal((await postConsent(base, start, { action: 'allow' })).status, 400, 'no consent without a checked key');
        for (let i = 0; i < 3; i++) await postConsent(base, start, { action: 'check', api_key: 'efk_nope' });
        const exhausted = await postConsent(base, start, { action: 'check', api_key: readKey.key });
        assert.equal(exhausted.status, 400);
        assert.match(exhausted.text, /Trop de clés refusées/);
        assert.match((await postConsent(base, start, { action: 'check', api_key: readKey.key })).text, /expiré ou a déjà reçu une réponse/);
      });

      it('takes the form only from the browser that opened it, from this site (CSRF)', async () => {
        const clientId = await registeredClient(base);
        const start = await openConsent(authorizationUrl(base, { clientId, challenge: pkce().challenge }));
        const other = await openConsent(authorizationUrl(base, { clientId, challenge: pkce().challenge }));
        assert.equal(
          (await postConsent(base, { handle: start.handle }, { action: 'check', api_key: readKey.key })).status,
          403,
          'no cookie',
        );
        assert.equal(
          (await postConsent(base, { handle: start.handle, cookie: other.cookie }, { action: 'check', api_key: readKey.key })).status,
          403,
          'another browser’s cookie',
        );
        const crossSite = await postForm(
          `${base}/authorize/consent`,
          { request: start.handle, action: 'check', api_key: readKey.key },
          { cookie: start.cookie!, 'sec-fetch-site': 'cross-site' },
        );
        assert.equal(crossSite.status, 403);
        assert.equal(
          (await postConsent(base, { handle: 'A'.repeat(43), cookie: start.cookie }, { action: 'check', api_key: readKey.key })).status,
          400,
          'an unknown request',
        );
        // The right browser still can: nothing above spent its attempts.
        assert.equal((await postConsent(base, start, { action: 'check', api_key: readKey.key })).status, 200);
      });

      it('sends a refusal back as access_denied', async () => {
        const clientId = await registeredClient(base);
        const start = await openConsent(authorizationUrl(base, { clientId, challenge: pkce().challenge, state: 'z' }));
        const back = redirectedTo(await postConsent(base, start, { action: 'deny' }));
        assert.equal(back.searchParams.get('error'), 'access_denied');
        assert.equal(back.searchParams.get('state'), 'z');
        assert.equal(back.searchParams.get('iss'), `${base}/`);
      });

      it('refuses a resource other than this server’s /mcp (invalid_target), before any consent', async () => {
        const clientId = await registeredClient(base);
        for (const resource of [`${base}/v1`, 'https://other.example/mcp', `${base}/mcp?x=1`, `${base}`]) {
          const start = await openConsent(
            authorizationUrl(base, { clientId, redirectUri: REDIRECT, challenge: pkce().challenge, state: 's', resource }),
          );
          assert.equal(start.status, 302, resource);
          const back = redirectedTo(start);
          assert.equal(back.searchParams.get('error'), 'invalid_target', resource);
          assert.equal(back.searchParams.get('iss'), `${base}/`, 'the SDK’s own error redirects carry iss too');
        }
        // Its other spellings are the same resource.
        const upper = new URL(base);
        const start = await openConsent(
          authorizationUrl(base, { clientId, challenge: pkce().challenge, resource: `HTTP://${upper.host}/mcp/` }),
        );
        assert.equal(start.status, 200);
      });

      it('refuses what the SDK checks before the consent: an unknown client, an unregistered redirect, no PKCE or plain PKCE', async () => {
        const clientId = await registeredClient(base);
        const unknown = await openConsent(
          authorizationUrl(base, { clientId: '00000000-0000-0000-0000-000000000000', challenge: pkce().challenge }),
        );
        assert.equal(unknown.status, 400);
        const unregistered = await openConsent(
          authorizationUrl(base, { clientId, redirectUri: 'http://127.0.0.1:7777/elsewhere', challenge: pkce().challenge }),
        );
        assert.equal(unregistered.status, 400);
        assert.equal(unregistered.headers.get('location'), null, 'never redirected to an unregistered URI');
        const plain = new URL(authorizationUrl(base, { clientId, redirectUri: REDIRECT, challenge: 'x'.repeat(43) }));
        plain.searchParams.set('code_challenge_method', 'plain');
        assert.equal(redirectedTo(await openConsent(plain.href)).searchParams.get('error'), 'invalid_request');
        const none = new URL(plain);
        none.searchParams.delete('code_challenge');
        none.searchParams.delete('code_challenge_method');
        assert.equal(redirectedTo(await openConsent(none.href)).searchParams.get('error'), 'invalid_request');
        const arrays = `${base}/authorize?client_id=a&client_id=b&response_type=code`;
        assert.equal((await openConsent(arrays)).status, 400);
      });
    });

    describe('tokens', () => {
      it('a code exchanged with its verifier gives tokens that call event_feed over MCP, with the key’s mailbox restriction', async () => {
        const tokens = await tokensFor(base, restrictedKey.key);
        assert.equal(tokens.response.token_type, 'Bearer');
        assert.ok(tokens.response.expires_in <= 3600);
        assert.equal(tokens.response.scope, 'read');
        assert.match(tokens.access, /^efo_/);
        const restricted = await mcpFeed(base, tokens.access, { limit: 100 });
        assert.equal(restricted.status, 200, JSON.stringify(restricted.body));
        assert.equal(restricted.events?.length, 5);
        assert.ok(
          restricted.events!.every((event) => event.subject.refs.mailbox_id === 'mbx_ventes'),
          'only the key’s mailbox',
        );
        const whole = await mcpFeed(base, (await tokensFor(base, readKey.key)).access, { limit: 100 });
        assert.equal(whole.events?.length, 10);
      });

      it('is paid by the key, and logs the key’s id', async () => {
        const tokens = await tokensFor(base, readKey.key);
        const response = await fetch(`${base}/mcp`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${tokens.access}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'x-request-id': 'oauth-paid-by-key',
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        assert.equal(response.status, 200);
        await response.text();
        const line = logLines.map((text) => JSON.parse(text)).find((entry) => entry.request_id === 'oauth-paid-by-key');
        assert.equal(line?.key_id, readKey.id);
      });

      it('refuses a reused code, and revokes the tokens it gave', async () => {
        const clientId = await registeredClient(base);
        const { verifier, challenge } = pkce();
        const code = (await consentWithKey(base, { clientId, redirectUri: REDIRECT, challenge }, readKey.key)).searchParams.get('code')!;
        const first = await exchangeCode(base, { clientId, code, verifier, redirectUri: REDIRECT });
        assert.equal(first.status, 200);
        const again = await exchangeCode(base, { clientId, code, verifier, redirectUri: REDIRECT });
        assert.equal(again.status, 400);
        assert.equal(again.json.error, 'invalid_grant');
        assert.equal((await mcpFeed(base, first.json.access_token)).status, 401, 'the first exchange’s access token is revoked');
        assert.equal((await refresh(base, { clientId, refreshToken: first.json.refresh_token })).json.error, 'invalid_grant');
      });

      it('refuses a wrong verifier, a wrong redirect_uri, a wrong resource, another client, a garbled code', async () => {
        const clientId = await registeredClient(base);
        const otherClient = await registeredClient(base);
        const { verifier, challenge } = pkce();
        const code = (await consentWithKey(base, { clientId, redirectUri: REDIRECT, challenge }, readKey.key)).searchParams.get('code')!;
        const refusals: Array<[string, Parameters<typeof exchangeCode>[1], string]> = [
          ['wrong verifier', { clientId, code, verifier: pkce().verifier, redirectUri: REDIRECT }, 'invalid_grant'],
          ['wrong redirect_uri', { clientId, code, verifier, redirectUri: 'http://127.0.0.1:7777/other' }, 'invalid_grant'],
          ['redirect_uri left out though the request named it', { clientId, code, verifier }, 'invalid_grant'],
          ['wrong resource', { clientId, code, verifier, redirectUri: REDIRECT, resource: `${base}/v1` }, 'invalid_target'],
          ['another client', { clientId: otherClient, code, verifier, redirectUri: REDIRECT }, 'invalid_grant'],
          ['garbled code', { clientId, code: `${code}x`, verifier, redirectUri: REDIRECT }, 'invalid_grant'],
          ['unknown client', { clientId: 'nobody', code, verifier, redirectUri: REDIRECT }, 'invalid_client'],
        ];
        for (const [what, fields, error] of refusals) {
          const refused = await exchangeCode(base, fields);
          assert.equal(refused.status, 400, `${what}: ${refused.text}`);
          assert.equal(refused.json.error, error, what);
        }
        // None of these spent it: the right exchange still works, once.
        assert.equal((await exchangeCode(base, { clientId, code, verifier, redirectUri: REDIRECT })).status, 200);
      });

      it('refreshes with rotation; a refresh token used twice revokes the whole family', async () => {
        const tokens = await tokensFor(base, readKey.key);
        const rotated = await refresh(base, { clientId: tokens.clientId, refreshToken: tokens.refresh, resource: `${base}/mcp` });
        assert.equal(rotated.status, 200, rotated.text);
        assert.notEqual(rotated.json.refresh_token, tokens.refresh);
        assert.notEqual(rotated.json.access_token, tokens.access);
        assert.equal(rotated.headers.get('cache-control'), 'no-store');
        assert.equal((await mcpFeed(base, rotated.json.access_token)).status, 200);
        assert.equal((await mcpFeed(base, tokens.access)).status, 401, 'the access token it replaced stops');
        const reused = await refresh(base, { clientId: tokens.clientId, refreshToken: tokens.refresh });
        assert.equal(reused.status, 400);
        assert.equal(reused.json.error, 'invalid_grant');
        assert.equal((await mcpFeed(base, rotated.json.access_token)).status, 401, 'the family is revoked');
        assert.equal(
          (await refresh(base, { clientId: tokens.clientId, refreshToken: rotated.json.refresh_token })).json.error,
          'invalid_grant',
        );
      });

      it('refuses a refresh for another resource or scope, or by another client', async () => {
        const tokens = await tokensFor(base, readKey.key);
        assert.equal(
          (await refresh(base, { clientId: tokens.clientId, refreshToken: tokens.refresh, resource: 'https://other.example/mcp' })).json
            .error,
          'invalid_target',
        );
        assert.equal(
          (await refresh(base, { clientId: tokens.clientId, refreshToken: tokens.refresh, scope: 'read write' })).json.error,
          'invalid_scope',
        );
        assert.equal(
          (await refresh(base, { clientId: await registeredClient(base), refreshToken: tokens.refresh })).json.error,
          'invalid_grant',
        );
        assert.equal(
          (await refresh(base, { clientId: tokens.clientId, refreshToken: tokens.refresh })).status,
          200,
          'still usable by its own client',
        );
      });

      it('revokes a token (RFC 7009): the access token and its refresh token stop at once', async () => {
        for (const which of ['access', 'refresh'] as const) {
          const tokens = await tokensFor(base, readKey.key);
          assert.equal(
            (await postForm(`${base}/revoke`, { client_id: await registeredClient(base), token: tokens[which] })).status,
            200,
            'another client’s revocation',
          );
          assert.equal((await mcpFeed(base, tokens.access)).status, 200, 'changes nothing');
          const revoked = await postForm(`${base}/revoke`, { client_id: tokens.clientId, token: tokens[which] });
          assert.equal(revoked.status, 200);
          assert.equal((await mcpFeed(base, tokens.access)).status, 401, which);
          assert.equal((await refresh(base, { clientId: tokens.clientId, refreshToken: tokens.refresh })).json.error, 'invalid_grant');
        }
        assert.equal(
          (await postForm(`${base}/revoke`, { client_id: await registeredClient(base), token: 'nonsense' })).status,
          200,
          'an unknown token is no error (§2.2)',
        );
      });

      it('stops every token of a key at once when the key is revoked (revoke_key), and issues none for it', async () => {
        const key = await server.key(workspace, ['read']);
        const tokens = await tokensFor(base, key.key);
        const clientId = await registeredClient(base);
        const { verifier, challenge } = pkce();
        const code = (await consentWithKey(base, { clientId, redirectUri: REDIRECT, challenge }, key.key)).searchParams.get('code')!;
        assert.equal((await mcpFeed(base, tokens.access)).status, 200);
        const revoked = await server.post('/v1/revoke_key', { id: key.id }, adminKey);
        assert.equal(revoked.status, 200, revoked.text);
        const refused = await mcpFeed(base, tokens.access);
        assert.equal(refused.status, 401);
        assert.match(refused.challenge ?? '', /invalid_token/);
        assert.equal((await refresh(base, { clientId: tokens.clientId, refreshToken: tokens.refresh })).json.error, 'invalid_grant');
        assert.equal(
          (await exchangeCode(base, { clientId, code, verifier, redirectUri: REDIRECT })).json.error,
          'invalid_grant',
          'a code given before is not exchanged',
        );
      });

      it('refuses an OAuth access token on /v1: it is for /mcp only', async () => {
        const tokens = await tokensFor(base, readKey.key);
        const refused = await server.post('/v1/event_feed', {}, tokens.access);
        assert.equal(refused.status, 401);
        assert.equal(refused.json.error.code, 'unauthorized');
        assert.match(refused.json.error.message, /only valid for MCP/);
        assert.equal((await server.post('/v1/event_feed', {}, readKey.key)).status, 200, 'API keys keep working on /v1');
        assert.equal((await mcpFeed(base, readKey.key)).status, 200, '… and on /mcp');
      });

      it('bounds the live grants of one key: past 20, the oldest are revoked', async () => {
        const key = await server.key(workspace, ['read']);
        const clientId = await registeredClient(base);
        const all = [];
        for (let i = 0; i < 21; i++) all.push(await tokensFor(base, key.key, { clientId }));
        assert.equal((await mcpFeed(base, all[0]!.access)).status, 401, 'the oldest grant was revoked');
        assert.equal((await mcpFeed(base, all[1]!.access)).status, 200);
        assert.equal((await mcpFeed(base, all[20]!.access)).status, 200);
        await tokensFor(base, key.key, { clientId });
        const rows = await server.db('oauth_grants').where({ key_id: key.id }).count({ n: '*' }).first();
        assert.ok(Number(rows?.n) <= 21, `${rows?.n} rows for the key: the revoked ones are deleted as new ones come`);
      });

      it('answers malformed token and revocation requests with OAuth errors, never 500', async () => {
        const attempts: Array<[string, RequestInit]> = [
          ['/token', { method: 'POST' }],
          ['/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"grant_type":"authorization_code"}' }],
          [
            '/token',
            { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=password&client_id=x' },
          ],
          [
            '/token',
            {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: `grant_type=authorization_code&client_id=${'x'.repeat(20_000)}`,
            },
          ],
          [
            '/token',
            {
              method: 'POST',
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: 'grant_type=refresh_token&client_id=x&refresh_token=efr_grt_AAAAAAAAAAAAAAAAAAAAAA_',
            },
          ],
          ['/token', { method: 'GET' }],
          ['/revoke', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'token=' }],
          [
            '/authorize/consent',
            { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'request[]=1&action=allow' },
          ],
          ['/authorize', { method: 'DELETE' }],
        ];
        for (const [path, init] of attempts) {
          const response = await fetch(base + path, { ...init, redirect: 'manual' });
          assert.ok(
            response.status >= 400 && response.status < 500,
            `${path} ${init.method} ${String(init.body).slice(0, 40)}: ${response.status}`,
          );
          await response.text();
        }
      });

      it('never logs a key, code, token or verifier', async () => {
        const tokens = await tokensFor(base, readKey.key);
        await refresh(base, { clientId: tokens.clientId, refreshToken: tokens.refresh });
        const log = logLines.join('');
        for (const secret of [readKey.key, restrictedKey.key, tokens.access, tokens.refresh])
          assert.ok(!log.includes(secret), `${secret.slice(0, 4)}… is not logged`);
        assert.doesNotMatch(log, /efc_|efo_|efr_|efk_|code_verifier|api_key=/);
      });
    });

    it('expires access tokens within an hour (the service’s clock)', async () => {
      const clock = new FakeClock(Date.now());
      const timed = await startTestServer(server.database, {}, { clock });
      try {
        const tokens = await tokensFor(timed.url, readKey.key);
        assert.equal((await mcpFeed(timed.url, tokens.access)).status, 200);
        clock.advanceDays(59 / (24 * 60));
        assert.equal((await mcpFeed(timed.url, tokens.access)).status, 200, 'at 59 minutes');
        clock.advanceDays(61 / (24 * 60) - 59 / (24 * 60));
        const expired = await mcpFeed(timed.url, tokens.access);
        assert.equal(expired.status, 401, 'at 61 minutes');
        assert.match(expired.challenge ?? '', /resource_metadata=/);
        assert.equal(
          (await refresh(timed.url, { clientId: tokens.clientId, refreshToken: tokens.refresh })).status,
          200,
          'its refresh token still works',
        );
      } finally {
        await timed.stop();
      }
    });

    it('refuses a token issued for another deployment’s /mcp on the same database (its resource)', async () => {
      const elsewhere = await startTestServer(server.database);
      try {
        const theirs = await tokensFor(elsewhere.url, readKey.key);
        assert.equal((await mcpFeed(elsewhere.url, theirs.access)).status, 200);
        assert.notEqual(elsewhere.url, base, 'another origin');
        assert.equal((await mcpFeed(base, theirs.access)).status, 401);
        // Its refresh token is not this issuer's (issue 41 #7): refused before its resource is looked at.
        assert.equal(
          (await refresh(base, { clientId: theirs.clientId, refreshToken: theirs.refresh, resource: `${base}/mcp` })).json.error,
          'invalid_grant',
        );
      } finally {
        await elsewhere.stop();
      }
    });

    it('expires an unused code within a minute', async () => {
      const clock = new FakeClock(Date.now());
      const timed = await startTestServer(server.database, {}, { clock });
      try {
        const clientId = await registeredClient(timed.url);
        const { verifier, challenge } = pkce();
        const code = (await consentWithKey(timed.url, { clientId, redirectUri: REDIRECT, challenge }, readKey.key)).searchParams.get(
          'code',
        )!;
        clock.advanceDays(61 / (24 * 3600));
        const refused = await exchangeCode(timed.url, { clientId, code, verifier, redirectUri: REDIRECT });
        assert.equal(refused.json.error, 'invalid_grant');
        assert.match(refused.json.error_description, /expired/);
      } finally {
        await timed.stop();
      }
    });
  });
}

describe('OAuth endpoints with the default rate limits', () => {
  let server: TestServer;
  before(async () => {
    const { sqliteDatabase } = await import('./support/databases.ts');
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '100' });
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('limits registrations per address (10 at once), then answers 429 with Retry-After', async () => {
    const statuses = [];
    for (let i = 0; i < 12; i++) statuses.push((await register(server.url, { redirect_uris: [REDIRECT] })).status);
    assert.deepEqual(statuses.slice(0, 10), Array(10).fill(201));
    const refused = await register(server.url, { redirect_uris: [REDIRECT] });
    assert.equal(refused.status, 429);
    assert.equal(refused.json.error, 'too_many_requests');
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
  });

  it('limits every OAuth endpoint per address', async () => {
    let status = 200;
    for (let i = 0; i < 80 && status !== 429; i++) status = (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).status;
    assert.equal(status, 429);
  });
});
