/**
 * The conformance kit given only an admin key (EVENT_FEED_ADMIN_KEY): it makes the keys it needs
 * through create_key, its checks use them, and it revokes every one when the run ends: when the
 * checks pass, when one fails, and when the run is interrupted (SIGTERM, SIGINT). list_keys
 * before and after shows nothing left behind. A key of another workspace it cannot make: the
 * isolation checks are skipped with that reason, unless EVENT_FEED_OTHER_KEY is given.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { publish } from '../src/library.ts';
import { startBrokenProxy } from './support/broken-proxy.ts';
import { runKit } from './support/conformance-run.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { until } from './support/wait.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const CROSS_WORKSPACE = [
  'cursors › a cursor from another workspace is refused with invalid_argument',
  "scoping › another workspace's key never sees this workspace's events",
];

describe('the conformance kit with an admin key', () => {
  let server: TestServer;
  let admin: string;
  let otherKey: string;

  const keysOf = async (includeRevoked = false) => {
    const listed = await server.post('/v1/list_keys', { include_revoked: includeRevoked, limit: 200 }, admin);
    assert.equal(listed.status, 200);
    return listed.json.keys as Array<{
      id: string;
      label: string | null;
      revoked_at: string | null;
      mailboxes: string[] | null;
      permissions: string[];
    }>;
  };
  const activeIds = async () => (await keysOf()).map((k) => k.id).sort();
  const kitKeys = async () => (await keysOf(true)).filter((k) => k.label?.startsWith('event-feed-conformance: '));

  before(async () => {
    // As `npm start` serves: the default rate limits.
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '' });
    const workspace = await server.workspace({ name: 'Espace administré' });
    admin = (await server.key(workspace, ['read', 'write', 'admin'])).key;
    const events = Array.from({ length: 40 }, (_, i) => sampleEvent(['mbx_ventes', 'mbx_autre', 'mbx_support'][i % 3], i));
    await server.db.transaction((trx) => publish(trx, workspace, events));
    const other = await server.workspace({ name: 'Autre espace' });
    await server.db.transaction((trx) => publish(trx, other, [sampleEvent('mbx_ventes', 99)]));
    otherKey = (await server.key(other, ['read'])).key;
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
  });

  it('makes the keys it needs, its checks use them, and revokes every one; the isolation checks are skipped, saying why', async () => {
    const before = await activeIds();
    const result = await runKit(
      server.url,
      {},
      { specs: ['api/auth\\.spec', 'api/scoping\\.spec', 'api/cursors\\.spec', 'api/mcp\\.spec'], env: { EVENT_FEED_ADMIN_KEY: admin } },
    );
    assert.equal(result.code, 0, result.output.slice(-4000));
    assert.deepEqual(result.failed, []);
    assert.deepEqual(result.skipped.sort(), [...CROSS_WORKSPACE].sort(), result.output.slice(-4000));
    for (const title of [
      'auth › a revoked key is refused with 401 unauthorized',
      'auth › a key without read is refused with 403 forbidden',
      'scoping › the restricted key sees the full feed filtered to its mailboxes',
      'scoping › the restricted key never sees an event of another mailbox',
      'mcp › MCP refuses a revoked key with 401',
      'mcp › MCP answers a key without read with a forbidden tool error',
    ]) {
      assert.ok(result.passed.includes(title), `${title} passed`);
    }
    assert.match(
      result.output,
      /SKIP {2}scoping › another workspace's key never sees this workspace's events: EVENT_FEED_OTHER_KEY not given, and EVENT_FEED_ADMIN_KEY makes keys of its own workspace only/,
    );
    assert.match(
      result.output,
      /not checked: a read key of another workspace: create_key makes keys of the admin key's own workspace only/,
    );
    assert.match(
      result.output,
      /keys: {7}4 made with EVENT_FEED_ADMIN_KEY through create_key, 4 of them revoked when the run ended: none left behind/,
    );

    assert.deepEqual(await activeIds(), before, 'list_keys: nothing left behind');
    const made = await kitKeys();
    assert.equal(made.length, 4);
    assert.ok(
      made.every((k) => k.revoked_at !== null),
      'every key the kit made is revoked',
    );
    const restricted = made.find((k) => k.mailboxes !== null)!;
    assert.ok(
      restricted.mailboxes!.length >= 1 && restricted.mailboxes!.every((m) => ['mbx_ventes', 'mbx_autre', 'mbx_support'].includes(m)),
      'restricted to mailboxes of the feed',
    );
    assert.ok(
      made.some((k) => !k.permissions.includes('read')),
      'a key without read',
    );
  });

  it('with writes allowed it makes a write key too; with EVENT_FEED_OTHER_KEY given nothing is skipped', async () => {
    const before = await activeIds();
    const already = (await kitKeys()).length;
    const result = await runKit(
      server.url,
      { EVENT_FEED_OTHER_KEY: otherKey },
      {
        allowWrites: true,
        specs: ['api/ordering\\.spec', 'api/scoping\\.spec', 'api/cursors\\.spec'],
        env: { EVENT_FEED_ADMIN_KEY: admin },
      },
    );
    assert.equal(result.code, 0, result.output.slice(-4000));
    assert.deepEqual(result.failed, []);
    assert.deepEqual(result.skipped, [], result.output.slice(-4000));
    assert.ok(result.passed.includes('ordering › events emitted one after another come back in that order'));
    assert.doesNotMatch(result.output, /not checked:/);
    assert.deepEqual(await activeIds(), before, 'list_keys: nothing left behind');
    const made = await kitKeys();
    assert.equal(made.length - already, 5, 'read, restricted, without read, revoked, write');
    assert.ok(made.every((k) => k.revoked_at !== null));
  });

  it('revokes them when a check fails', async () => {
    const before = await activeIds();
    const proxy = await startBrokenProxy(server.url, 'reversed-page', { full: 'none', restricted: 'none' });
    try {
      const result = await runKit(proxy.url, {}, { specs: ['api/ordering\\.spec'], env: { EVENT_FEED_ADMIN_KEY: admin } });
      assert.notEqual(result.code, 0);
      assert.ok(
        result.failed.includes('ordering › pages read with limits 1, 7, 100 and 500 concatenate to the same sequence'),
        JSON.stringify(result.failed),
      );
      assert.match(result.output, /revoked when the run ended: none left behind/);
    } finally {
      await proxy.close();
    }
    assert.deepEqual(await activeIds(), before, 'list_keys: nothing left behind');
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`revokes them when the run is interrupted (${signal})`, async () => {
      const before = await activeIds();
      const dir = mkdtempSync(join(tmpdir(), 'kit-interrupted-'));
      const kit = spawn(process.execPath, [join(root, 'conformance', 'bin', 'event-feed-conformance.js'), '--project', 'api'], {
        cwd: dir,
        env: { ...process.env, EVENT_FEED_BASE_URL: server.url, EVENT_FEED_ADMIN_KEY: admin, EVENT_FEED_ALLOW_WRITES: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      kit.stdout.on('data', (chunk) => (output += chunk));
      kit.stderr.on('data', (chunk) => (output += chunk));
      const exited = new Promise<number | null>((resolve) => kit.once('exit', (code) => resolve(code)));
      try {
        // Once its keys are made and the checks have started, the run is stopped.
        // Polled slowly: list_keys spends the admin key's rate budget, which the kit shares.
        await until('the kit made its keys', async () => (await sleep(250), (await activeIds()).length > before.length), 60_000);
        await until('the first check', () => /✓|✘|-\s+\d+ \[api\]/.test(output), 60_000);
        kit.kill(signal);
        const code = await exited;
        assert.notEqual(code, 0, 'an interrupted run does not pass');
        assert.match(output, /revoked when the run ended: none left behind/, output.slice(-3000));
        assert.deepEqual(await activeIds(), before, 'list_keys: nothing left behind');
      } finally {
        kit.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
