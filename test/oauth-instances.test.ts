/**
 * An OAuth access token stops on every instance as soon as its key is revoked (issue 32, part 4):
 * two servers on one Postgres database; a token issued through A is used on B (which then keeps
 * the key as verified), the key is revoked through A's revoke_key, and B refuses the token on its
 * very next request, with B's key channel up and down, as it refuses the key itself
 * (key-revocation-instances.test.ts). A token revoked through A's revocation endpoint is refused
 * by B at once too (grants are not kept in memory).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { HEAD_LISTENER_NAME } from '../src/store/postgres/changes.ts';
import { postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';
import { mcpFeed, postForm, tokensFor } from './support/oauth.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { until } from './support/wait.ts';

describe(
  'OAuth tokens across two instances on one postgres database',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
    let database: TestDatabase;
    let one: TestServer;
    let two: TestServer;
    let admin: string;
    let workspace: string;

    before(async () => {
      database = await postgresDatabase();
      // One public origin for both, as behind a balancer: a token issued through one is for the other's /mcp too.
      one = await startTestServer(database, { PUBLIC_URL: 'http://127.0.0.1:1' });
      two = await startTestServer(database, { PUBLIC_URL: 'http://127.0.0.1:1' });
      workspace = await one.workspace();
      admin = (await one.key(workspace, ['read', 'admin'])).key;
      await until('both key channels are up', () => one.services.changes.live && two.services.changes.live, 10_000);
    });
    after(async () => {
      await one?.stop();
      await two?.stop();
      await database?.drop();
    });

    /** A key, a token issued for it through A, used (and its key kept) on B; then the key revoked through A and B asked at once. */
    async function revokeKeyThroughA(): Promise<void> {
      const key = await one.key(workspace, ['read']);
      const tokens = await tokensFor(one.url, key.key, { origin: 'http://127.0.0.1:1' });
      for (let i = 0; i < 3; i++)
        assert.equal((await mcpFeed(two.url, tokens.access)).status, 200, 'B accepts the token (and keeps its key)');
      const revoked = await one.post('/v1/revoke_key', { id: key.id }, admin);
      assert.equal(revoked.status, 200, revoked.text);
      const next = await mcpFeed(two.url, tokens.access);
      assert.equal(next.status, 401, `B's very next request: ${JSON.stringify(next.body)}`);
    }

    it('a revoked key’s token is refused by B on the very next request, with the key channel up', async () => {
      for (let i = 0; i < 3; i++) await revokeKeyThroughA();
    });

    it('a token revoked through A’s revocation endpoint is refused by B at once', async () => {
      const key = await one.key(workspace, ['read']);
      const tokens = await tokensFor(one.url, key.key, { origin: 'http://127.0.0.1:1' });
      assert.equal((await mcpFeed(two.url, tokens.access)).status, 200);
      assert.equal((await postForm(`${one.url}/revoke`, { client_id: tokens.clientId, token: tokens.access })).status, 200);
      assert.equal((await mcpFeed(two.url, tokens.access)).status, 401);
    });

    it("with B's key channel down: still refused on the very next request", async () => {
      await one.db.raw(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ? AND datname = current_database()',
        [HEAD_LISTENER_NAME],
      );
      await until('the channels are down', () => !two.services.changes.live, 5000);
      await revokeKeyThroughA();
    });
  },
);
