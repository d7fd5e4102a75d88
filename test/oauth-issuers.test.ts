/**
 * The token endpoint redeems only the grants of its own issuer (issue 41 #7): two deployments on
 * one database, with different public origins (PUBLIC_URL), are two authorization servers. A code
 * issued through A is refused by B's token endpoint (invalid_grant) and still redeemed by A; a
 * refresh token of A's is refused by B and still refreshed by A. Two instances of one deployment
 * (the same PUBLIC_URL) share their grants as before (test/oauth-instances.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';
import { consentWithKey, exchangeCode, pkce, refresh, registeredClient } from './support/oauth.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const REDIRECT = 'http://127.0.0.1:7777/callback';
const ORIGIN_A = 'http://127.0.0.1:1';
const ORIGIN_B = 'http://127.0.0.1:2';

describe(
  'grants are redeemed only by their issuer (postgres, two deployments on one database)',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
    let database: TestDatabase;
    let a: TestServer;
    let b: TestServer;
    let key: string;
    before(async () => {
      database = await postgresDatabase();
      a = await startTestServer(database, { PUBLIC_URL: ORIGIN_A });
      b = await startTestServer(database, { PUBLIC_URL: ORIGIN_B });
      key = (await a.key(await a.workspace(), ['read'])).key;
    });
    after(async () => {
      await a?.stop();
      await b?.stop();
      await database?.drop();
    });

    it("A's code is invalid_grant at B, and still redeemed at A; A's refresh token likewise", async () => {
      const clientId = await registeredClient(a.url, REDIRECT);
      const { verifier, challenge } = pkce();
      const back = await consentWithKey(a.url, { clientId, redirectUri: REDIRECT, challenge, resource: `${ORIGIN_A}/mcp` }, key);
      const code = back.searchParams.get('code')!;
      assert.equal(back.searchParams.get('iss'), `${ORIGIN_A}/`);

      const atB = await exchangeCode(b.url, { clientId, code, verifier, redirectUri: REDIRECT });
      assert.equal(atB.status, 400, atB.text);
      assert.equal(atB.json.error, 'invalid_grant', atB.text);
      const atA = await exchangeCode(a.url, { clientId, code, verifier, redirectUri: REDIRECT });
      assert.equal(atA.status, 200, `A still redeems its code: ${atA.text}`);

      const refreshedAtB = await refresh(b.url, { clientId, refreshToken: atA.json.refresh_token });
      assert.equal(refreshedAtB.status, 400, refreshedAtB.text);
      assert.equal(refreshedAtB.json.error, 'invalid_grant', refreshedAtB.text);
      const refreshedAtA = await refresh(a.url, { clientId, refreshToken: atA.json.refresh_token });
      assert.equal(refreshedAtA.status, 200, `A still refreshes: ${refreshedAtA.text}`);
    });
  },
);
