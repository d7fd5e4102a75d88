import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sampleEvent } from './support/contract.ts';
import { startBrokenProxy, type Breakage } from './support/broken-proxy.ts';
import { provisionWithCli, runKit, type KitKeys } from './support/conformance-run.ts';
import { databaseKinds } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

async function deployment(create: () => Promise<import('./support/databases.ts').TestDatabase>) {
  const database = await create();
  const keys = await provisionWithCli(database.url);
  const server = await startTestServer(database);
  // The other workspace gets events of its own, so "never sees this workspace's events" means something.
  for (let i = 0; i < 3; i++) await server.post('/v1/emit_event', sampleEvent('mbx_ventes', i), keys.otherWriteKey);
  return { server, keys };
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`the conformance kit passes against a correct deployment on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let keys: KitKeys;
    before(async () => ({ server, keys } = await deployment(create)));
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    it('every check runs and passes', async () => {
      // The browser view runs once, on SQLite; the API checks on every database.
      const result = await runKit(server.url, keys, kind === 'sqlite' ? ['api', 'view'] : ['api']);
      assert.equal(result.code, 0, result.output.slice(-4000));
      assert.deepEqual(result.failed, []);
      assert.deepEqual(result.skipped, [], 'with every key given, nothing is skipped');
      assert.ok(result.passed.length >= 25, `${result.passed.length} checks passed`);
    });
  });
}

describe('the conformance kit reports what it could not check', () => {
  let server: TestServer;
  let keys: KitKeys;
  before(async () => {
    const [sqlite] = await databaseKinds();
    ({ server, keys } = await deployment(sqlite!.create));
    for (let i = 0; i < 20; i++) await server.post('/v1/emit_event', sampleEvent(i % 2 ? 'mbx_ventes' : 'mbx_autre', i), keys.EVENT_FEED_WRITE_KEY);
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('skips, visibly and with the reason, the checks whose key is missing', async () => {
    const result = await runKit(server.url, { EVENT_FEED_KEY: keys.EVENT_FEED_KEY });
    assert.equal(result.code, 0, result.output.slice(-3000));
    assert.deepEqual(result.failed, []);
    for (const title of ['scoping › the restricted key sees the full feed filtered to its mailboxes', 'auth › a key without read is refused with 403 forbidden', 'ordering › events emitted one after another come back in that order']) {
      assert.ok(result.skipped.includes(title), `${title} is skipped`);
    }
    assert.match(result.output, /check\(s\) SKIPPED, not passed:/);
    assert.match(result.output, /EVENT_FEED_WRITE_KEY not given/);
    assert.match(result.output, /EVENT_FEED_RESTRICTED_KEY \/ EVENT_FEED_RESTRICTED_MAILBOXES not given/);
  });
});

describe('the conformance kit fails against broken deployments, naming the broken rule', () => {
  let server: TestServer;
  let keys: KitKeys;
  before(async () => {
    const [sqlite] = await databaseKinds();
    ({ server, keys } = await deployment(sqlite!.create));
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  const cases: Array<[Breakage, string]> = [
    ['reversed-page', 'ordering › pages read with limits 1, 7, 100 and 500 concatenate to the same sequence'],
    ['cursor-not-echoed', 'cursor echo › at the end of the feed next_cursor equals after, on repeated calls'],
    ['scoping-ignored', 'scoping › the restricted key never sees an event of another mailbox'],
    ['unknown-parameter-accepted', 'limits › an unknown parameter is refused with invalid_argument'],
    ['event-dropped-between-pages', 'ordering › pages read with limits 1, 7, 100 and 500 concatenate to the same sequence'],
    ['extra-response-property', "envelope › every response validates against the deployment's published EventFeedResponse"],
    ['read-appends-event', 'no side effects › reading adds no event'],
  ];
  for (const [breakage, rule] of cases) {
    it(`catches ${breakage}`, async () => {
      const proxy = await startBrokenProxy(server.url, breakage, { full: keys.EVENT_FEED_KEY, restricted: keys.EVENT_FEED_RESTRICTED_KEY, write: keys.EVENT_FEED_WRITE_KEY });
      try {
        const result = await runKit(proxy.url, keys);
        assert.notEqual(result.code, 0, `the kit passed a deployment with ${breakage}`);
        assert.ok(result.failed.includes(rule), `expected "${rule}" among the failures: ${JSON.stringify(result.failed)}`);
      } finally {
        await proxy.close();
      }
    });
  }
});
