/**
 * /authorize never redirects a browser to an address nobody verified (issue 41, finding 1): a
 * client registered by anyone names https://phish.example/login, and every error of a request that
 * does not name that URI exactly (or whose client is unknown, whose redirect_uri is not registered…)
 * is a page of ours, not a 302 there. A verified redirect URI (named and registered exactly) gets
 * the error redirect, with a short error_description, never a validation dump. Both databases.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { databaseKinds } from './support/databases.ts';
import { authorizationUrl, openConsent, pkce, register, redirectedTo } from './support/oauth.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const PHISH = 'https://phish.example/login';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`/authorize redirects only to verified URIs on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let base: string;
    let clientId: string;
    before(async () => {
      server = await startTestServer(await create());
      base = server.url;
      const registered = await register(base, { redirect_uris: [PHISH], client_name: 'Phish' });
      assert.equal(registered.status, 201, registered.text);
      clientId = registered.json.client_id;
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    const assertOurPage = (got: { status: number; headers: Headers; text: string }, what: string) => {
      assert.equal(got.headers.get('location'), null, `${what}: never redirected (${got.headers.get('location')})`);
      assert.equal(got.status, 400, `${what}: ${got.text.slice(0, 200)}`);
      assert.match(got.headers.get('content-type') ?? '', /^text\/html/, what);
      assert.match(got.text, /Autorisation impossible/, what);
      assert.doesNotMatch(got.text, /phish\.example/, `${what}: the page does not link to it`);
      assert.match(got.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, what);
    };

    it('errors of a request that does not name its redirect URI: our page, never a 302 to it', async () => {
      const plain = new URL(authorizationUrl(base, { clientId, challenge: 'x'.repeat(43), state: 's' }));
      plain.searchParams.set('code_challenge_method', 'plain');
      assertOurPage(await openConsent(plain.href), 'plain PKCE');
      const resource = authorizationUrl(base, { clientId, challenge: pkce().challenge, resource: 'https://other.example/mcp' });
      assertOurPage(await openConsent(resource), 'another resource');
      const badResource = authorizationUrl(base, { clientId, challenge: pkce().challenge, resource: 'not a url' });
      assertOurPage(await openConsent(badResource), 'an invalid resource');
      const noPkce = new URL(plain);
      noPkce.searchParams.delete('code_challenge');
      noPkce.searchParams.delete('code_challenge_method');
      assertOurPage(await openConsent(noPkce.href), 'no PKCE');
      const token = new URL(authorizationUrl(base, { clientId, challenge: pkce().challenge }));
      token.searchParams.set('response_type', 'token');
      assertOurPage(await openConsent(token.href), 'response_type token');
    });

    it('a client or redirect URI not established: our page (unknown client, unregistered URI, repeated parameters)', async () => {
      assertOurPage(await openConsent(`${base}/authorize?response_type=code&redirect_uri=${encodeURIComponent(PHISH)}`), 'no client');
      assertOurPage(
        await openConsent(authorizationUrl(base, { clientId: 'nobody', redirectUri: PHISH, challenge: pkce().challenge })),
        'unknown client',
      );
      assertOurPage(
        await openConsent(authorizationUrl(base, { clientId, redirectUri: 'https://phish.example/other', challenge: pkce().challenge })),
        'unregistered redirect URI',
      );
      const twice = `${base}/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent(PHISH)}&redirect_uri=x&response_type=code`;
      assertOurPage(await openConsent(twice), 'redirect_uri twice');
    });

    it('a verified redirect URI (named, registered exactly) gets the error redirect, with a short description and iss', async () => {
      const plain = new URL(authorizationUrl(base, { clientId, redirectUri: PHISH, challenge: 'x'.repeat(43), state: 'st' }));
      plain.searchParams.set('code_challenge_method', 'plain');
      const back = redirectedTo(await openConsent(plain.href));
      assert.equal(`${back.origin}${back.pathname}`, PHISH);
      assert.equal(back.searchParams.get('error'), 'invalid_request');
      assert.equal(back.searchParams.get('state'), 'st');
      assert.equal(back.searchParams.get('iss'), `${base}/`);
      const description = back.searchParams.get('error_description') ?? '';
      assert.ok(description.length > 0 && description.length <= 200, description);
      assert.doesNotMatch(description, /[[{\n]|"code"|"path"/, `no validation dump: ${description}`);
      const resource = redirectedTo(
        await openConsent(authorizationUrl(base, { clientId, redirectUri: PHISH, challenge: pkce().challenge, resource: 'not a url' })),
      );
      assert.equal(resource.searchParams.get('error'), 'invalid_target');
      assert.doesNotMatch(resource.searchParams.get('error_description') ?? '', /[[{\n]/);
    });

    it('a valid request still shows the consent page, with or without redirect_uri', async () => {
      for (const redirectUri of [undefined, PHISH]) {
        const start = await openConsent(authorizationUrl(base, { clientId, redirectUri, challenge: pkce().challenge, state: 's' }));
        assert.equal(start.status, 200, start.text.slice(0, 300));
        assert.ok(start.handle);
      }
    });
  });
}
