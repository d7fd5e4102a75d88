/**
 * OAuth state nobody authenticated is bounded per client address as well as in all (issue 41 #3):
 * pending authorization requests and registered clients never used have a cap per address (IPv6 by
 * its /64), so a handful of addresses cannot fill what every client shares; a client nobody
 * consented to expires 30 minutes after its registration; /register answers no CORS header unless
 * the operator lists the origin (OAUTH_REGISTRATION_ALLOWED_ORIGINS). The service runs behind one
 * trusted proxy (TRUST_PROXY_HOPS=1): X-Forwarded-For names the address. Rate limits are off, as
 * in the finding: the caps hold by themselves.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_PENDING_REQUESTS_PER_ADDRESS, MAX_UNUSED_CLIENTS_PER_ADDRESS, UNUSED_CLIENT_MS } from '../src/oauth/limits.ts';
import { databaseKinds } from './support/databases.ts';
import { answer, authorizationUrl, pageError, pkce, registeredClient, type Answer } from './support/oauth.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const REDIRECT = 'http://127.0.0.1:7777/callback';

const registerFrom = async (base: string, address: string, headers: Record<string, string> = {}) =>
  answer(
    await fetch(`${base}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address, ...headers },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'Assistant', token_endpoint_auth_method: 'none' }),
    }),
  );

/** Opens an authorization request (naming the registered redirect URI: a verified one) from `address`. */
const authorizeFrom = async (base: string, clientId: string, address: string) =>
  answer(
    await fetch(authorizationUrl(base, { clientId, redirectUri: REDIRECT, challenge: pkce().challenge }), {
      redirect: 'manual',
      headers: { 'x-forwarded-for': address },
    }),
  );

/** The error an authorization request was refused with: its redirect's `error`, or the page's. */
const refusedWith = (got: Answer) =>
  got.status === 302 || got.status === 303 ? new URL(got.headers.get('location')!).searchParams.get('error') : pageError(got).error;

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`OAuth state is bounded per address (${kind})`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(await create(), { TRUST_PROXY_HOPS: '1' });
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    it(`pending authorization requests: ${MAX_PENDING_REQUESTS_PER_ADDRESS} per address (IPv6 per /64), others still served`, async () => {
      const clientId = await registeredClient(server.url, REDIRECT);
      for (const address of ['203.0.113.7', '2001:db8:1:2::1']) {
        for (let i = 0; i < MAX_PENDING_REQUESTS_PER_ADDRESS; i++) {
          const got = await authorizeFrom(server.url, clientId, address);
          assert.equal(got.status, 200, `${address} #${i}: ${got.text.slice(0, 300)}`);
        }
        const beyond = await authorizeFrom(server.url, clientId, address);
        assert.notEqual(beyond.status, 200, `${address}: one beyond the cap is refused`);
        assert.equal(refusedWith(beyond), 'temporarily_unavailable', beyond.text.slice(0, 300));
      }
      // The same /64: the same address.
      assert.notEqual((await authorizeFrom(server.url, clientId, '2001:db8:1:2:ffff::9')).status, 200, 'the same /64 is refused');
      // Any other address is served.
      for (const address of ['203.0.113.8', '2001:db8:1:3::1'])
        assert.equal((await authorizeFrom(server.url, clientId, address)).status, 200, address);
    });

    it(`registered clients never used: ${MAX_UNUSED_CLIENTS_PER_ADDRESS} per address, others still register`, async () => {
      for (let i = 0; i < MAX_UNUSED_CLIENTS_PER_ADDRESS; i++) {
        const got = await registerFrom(server.url, '198.51.100.20');
        assert.equal(got.status, 201, `#${i}: ${got.text}`);
      }
      const beyond = await registerFrom(server.url, '198.51.100.20');
      assert.notEqual(beyond.status, 201, beyond.text);
      assert.equal(beyond.json?.error, 'temporarily_unavailable', beyond.text);
      assert.equal((await registerFrom(server.url, '198.51.100.21')).status, 201, 'another address registers');
    });

    it('a client nobody consented to expires 30 minutes after its registration; a used one stays', async () => {
      const unused = await registeredClient(server.url, REDIRECT);
      const used = await registeredClient(server.url, REDIRECT);
      const old = Date.now() - UNUSED_CLIENT_MS - 60_000;
      await server.db('oauth_clients').whereIn('client_id', [unused, used]).update({ created_at: old });
      await server
        .db('oauth_clients')
        .where({ client_id: used })
        .update({ used_at: old + 1000 });
      assert.equal(UNUSED_CLIENT_MS, 30 * 60_000);
      const expired = await authorizeFrom(server.url, unused, '192.0.2.50');
      assert.equal(expired.status, 400, expired.text.slice(0, 300));
      assert.equal(pageError(expired).error, 'invalid_client');
      assert.equal((await authorizeFrom(server.url, used, '192.0.2.50')).status, 200);
    });

    it('/register answers no CORS header: a page elsewhere cannot make its visitors register clients', async () => {
      const got = await registerFrom(server.url, '192.0.2.60', { origin: 'https://attacker.example' });
      assert.equal(got.status, 201, got.text);
      assert.equal(got.headers.get('access-control-allow-origin'), null);
      const preflight = await fetch(`${server.url}/register`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://attacker.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type',
        },
      });
      assert.equal(preflight.headers.get('access-control-allow-origin'), null);
    });
  });
}

describe('OAUTH_REGISTRATION_ALLOWED_ORIGINS lists the pages that may register', () => {
  let server: TestServer;
  before(async () => {
    const [sqlite] = await databaseKinds();
    server = await startTestServer(await sqlite!.create(), { OAUTH_REGISTRATION_ALLOWED_ORIGINS: 'https://app.example' });
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
  });

  it('a listed origin gets its own origin back (and the preflight passes); any other none', async () => {
    const listed = await registerFrom(server.url, '192.0.2.70', { origin: 'https://app.example' });
    assert.equal(listed.status, 201, listed.text);
    assert.equal(listed.headers.get('access-control-allow-origin'), 'https://app.example');
    const preflight = await fetch(`${server.url}/register`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example');
    const other = await registerFrom(server.url, '192.0.2.70', { origin: 'https://attacker.example' });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    // The scheme counts: the listed host over http is another origin.
    const http = await registerFrom(server.url, '192.0.2.70', { origin: 'http://app.example' });
    assert.equal(http.headers.get('access-control-allow-origin'), null);
  });
});
