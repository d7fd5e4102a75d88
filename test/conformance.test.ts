import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { startBrokenProxy, type Breakage } from './support/broken-proxy.ts';
import { provisionWithCli, runKit, type KitKeys } from './support/conformance-run.ts';
import { databaseKinds } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

/** The service's own rate limits (config.ts's defaults: an empty value is the default), as `npm start` runs. */
const DEFAULT_RATE_LIMITS = { RATE_LIMIT_PER_SECOND: '' };

const chromium = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
/** The view's checks, skipped (visibly) on a machine without Chromium. */
const isViewCheck = (title: string) => title.startsWith('French web view › ');

async function deployment(
  create: () => Promise<import('./support/databases.ts').TestDatabase>,
  env: Record<string, string> = {},
  events = 0,
) {
  const database = await create();
  const keys = await provisionWithCli(database.url);
  const server = await startTestServer(database, env);
  // The other workspace gets events of its own, so "never sees this workspace's events" means something.
  for (let i = 0; i < 3; i++) await server.post('/v1/emit_event', sampleEvent('mbx_ventes', i), keys.otherWriteKey);
  if (events > 0) {
    // A feed like the demo's, written behind the API (its rate limit would pace this too).
    const first = await server.post('/v1/emit_event', sampleEvent('mbx_autre', 0), keys.EVENT_FEED_WRITE_KEY);
    const batch = Array.from({ length: events }, (_, i) => sampleEvent(['mbx_ventes', 'mbx_autre', 'mbx_support'][i % 3], i + 1));
    await server.db.transaction((trx) => publish(trx, first.json.event.account, batch));
  }
  return { server, keys };
}

/**
 * In front of a broken proxy, which rewrites JSON answers and so reads whole bodies: an event stream
 * (`Accept: text/event-stream`, which never ends by itself) would hang there, and end in a parse
 * error when the server stops. Streams go straight to the server, untouched; everything else to the proxy.
 */
async function streamsAround(proxyUrl: string, serverUrl: string): Promise<{ url: string; close(): Promise<void> }> {
  const front = createServer((req, res) => {
    const target = new URL(/text\/event-stream/i.test(req.headers.accept ?? '') ? serverUrl : proxyUrl);
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, connection: 'close' },
        agent: false,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    // The client went away before the end (a stream it closed): so does the request upstream.
    res.on('close', () => res.writableFinished || upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(front.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        front.close(() => resolve());
        front.closeAllConnections();
      }),
  };
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(
    `the conformance kit passes against a correct deployment with the default rate limits on ${kind}`,
    { skip: skip && 'Postgres unreachable (see notice above)' },
    () => {
      let server: TestServer;
      let keys: KitKeys;
      // 600 events: the kit's ordering check alone sends over 300 reads, past the default burst.
      before(async () => ({ server, keys } = await deployment(create, DEFAULT_RATE_LIMITS, 600)));
      after(async () => {
        await server.stop();
        await server.database.drop();
      });

      it('every check runs and passes', async () => {
        // The browser view runs once, on SQLite; the API checks on every database.
        const result = await runKit(server.url, keys, { projects: kind === 'sqlite' ? ['api', 'view'] : ['api'] });
        assert.equal(result.code, 0, result.output.slice(-4000));
        assert.deepEqual(result.failed, []);
        if (existsSync(chromium)) assert.deepEqual(result.skipped, [], 'with every key given, nothing is skipped');
        else {
          assert.deepEqual(
            result.skipped.filter((t) => !isViewCheck(t)),
            [],
            'with every key given, only the view (no Chromium) is skipped',
          );
          assert.match(result.output, /no Chromium at .*: view checks skipped/);
        }
        assert.ok(result.passed.length >= 25, `${result.passed.length} checks passed`);
        // The report names the deployment and its version, and the time spent on its rate limits.
        assert.ok(result.output.includes(`deployment: ${server.url}`), 'the report names the deployment');
        assert.match(result.output, /service: +event-feed \d+\.\d+\.\d+, contract \d+\.\d+\.\d+/);
        assert.match(result.output, /rate limits: waited \d+\.\d s in all \(bound 120 s, EVENT_FEED_MAX_WAIT_SECONDS\)/);
        assert.match(result.output, /^  PASS  ordering › pages read with limits 1, 7, 100 and 500 concatenate to the same sequence$/m);
        if (result.skipped.length === 0) assert.match(result.output, /^Conformance: every check ran and passed \(\d+\)\.$/m);
        else assert.doesNotMatch(result.output, /every check ran/, 'the view was skipped: not every check ran');
      });
    },
  );
}

describe('the conformance kit reports what it could not check', () => {
  let server: TestServer;
  let keys: KitKeys;
  before(async () => {
    const [sqlite] = await databaseKinds();
    ({ server, keys } = await deployment(sqlite!.create));
    for (let i = 0; i < 20; i++)
      await server.post('/v1/emit_event', sampleEvent(i % 2 ? 'mbx_ventes' : 'mbx_autre', i), keys.EVENT_FEED_WRITE_KEY);
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('skips, visibly and with the reason, the checks whose key is missing', async () => {
    const result = await runKit(server.url, { EVENT_FEED_KEY: keys.EVENT_FEED_KEY });
    assert.equal(result.code, 0, result.output.slice(-3000));
    assert.deepEqual(result.failed, []);
    for (const title of [
      'scoping › the restricted key sees the full feed filtered to its mailboxes',
      'auth › a key without read is refused with 403 forbidden',
      'mcp › MCP refuses a revoked key with 401',
    ]) {
      assert.ok(result.skipped.includes(title), `${title} is skipped`);
    }
    assert.match(result.output, /check\(s\) SKIPPED, not passed/);
    assert.match(result.output, /^  SKIP  auth › a key without read is refused with 403 forbidden: EVENT_FEED_NOREAD_KEY not given/m);
    assert.match(result.output, /EVENT_FEED_RESTRICTED_KEY \/ EVENT_FEED_RESTRICTED_MAILBOXES not given/);
  });

  it('with --allow-writes but no write key, skips the checks that emit, saying so', async () => {
    const result = await runKit(server.url, { EVENT_FEED_KEY: keys.EVENT_FEED_KEY }, { allowWrites: true, specs: ['api/ordering\\.spec'] });
    assert.equal(result.code, 0, result.output.slice(-3000));
    assert.ok(result.skipped.includes('ordering › events emitted one after another come back in that order'));
    assert.match(
      result.output,
      /^  SKIP  ordering › events emitted one after another come back in that order: EVENT_FEED_WRITE_KEY not given/m,
    );
    assert.doesNotMatch(result.output, /read-only run/);
  });

  it('is read-only without the explicit opt-in, even with a write key', async () => {
    const before = await server.post('/v1/event_feed', { limit: 500 }, keys.EVENT_FEED_KEY);
    const result = await runKit(server.url, keys, { allowWrites: false });
    assert.equal(result.code, 0, result.output.slice(-3000));
    assert.deepEqual(result.failed, []);
    // A read-only run is made of the read-only checks: those that emit are not in it (not skipped one
    // by one), and the report says so.
    for (const title of [
      'ordering › events emitted one after another come back in that order',
      'cursor echo › events emitted after the end appear once, after the old ones',
    ]) {
      assert.ok(![...result.passed, ...result.failed, ...result.skipped].includes(title), `${title} is not run`);
    }
    assert.match(result.output, /^ {2}writes: {5}read-only run: the checks that emit events \(tagged @writes\) were not run/m);
    const afterRun = await server.post('/v1/event_feed', { after: before.json.next_cursor, limit: 500 }, keys.EVENT_FEED_KEY);
    assert.deepEqual(afterRun.json.events, [], 'the kit added no event');
  });

  it('marks the events it emits when allowed to write', async () => {
    const start = await server.post('/v1/event_feed', { limit: 500 }, keys.EVENT_FEED_KEY);
    let cursor = start.json.next_cursor;
    for (let page = start; page.json.events.length > 0; cursor = page.json.next_cursor)
      page = await server.post('/v1/event_feed', { after: cursor, limit: 500 }, keys.EVENT_FEED_KEY);
    const result = await runKit(
      server.url,
      { EVENT_FEED_KEY: keys.EVENT_FEED_KEY, EVENT_FEED_WRITE_KEY: keys.EVENT_FEED_WRITE_KEY },
      { allowWrites: true },
    );
    assert.deepEqual(result.failed, [], result.output.slice(-3000));
    const added = (await server.post('/v1/event_feed', { after: cursor, limit: 500 }, keys.EVENT_FEED_KEY)).json.events;
    assert.ok(added.length > 0, 'the kit emitted events');
    for (const event of added) {
      assert.match(event.subject.person.email, /@event-feed-conformance\.invalid$/);
      assert.match(event.data.subject_line, /^\[event-feed conformance\] /);
      assert.match(event.data.internet_message_id, /@event-feed-conformance\.invalid>$/);
    }
  });
});

describe('the conformance kit and rate limits', () => {
  it('reports a check it could not finish within the wait bound as skipped, never failed', async () => {
    const [sqlite] = await databaseKinds();
    // One request per 20 s per key and per address: the kit's first requests already need more than the bound.
    const { server, keys } = await deployment(sqlite!.create, {
      RATE_LIMIT_PER_SECOND: '0.05',
      RATE_LIMIT_BURST: '3',
      RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0.05',
      RATE_LIMIT_PER_ADDRESS_BURST: '3',
    });
    try {
      const result = await runKit(server.url, { EVENT_FEED_KEY: keys.EVENT_FEED_KEY }, { env: { EVENT_FEED_MAX_WAIT_SECONDS: '2' } });
      assert.deepEqual(result.failed, [], result.output.slice(-3000));
      assert.equal(result.code, 0, 'no failure: a rate limit is not a contract failure');
      assert.ok(result.skipped.length > 5, `skipped: ${result.skipped.length}`);
      assert.match(
        result.output,
        /SKIP .*rate limited by the deployment \(429, Retry-After \d+ s\).*EVENT_FEED_MAX_WAIT_SECONDS=2; check not run/,
      );
      assert.match(result.output, /rate limits: waited \d+\.\d s in all \(bound 2 s, EVENT_FEED_MAX_WAIT_SECONDS\)/);
      assert.doesNotMatch(result.output, /every check ran/);
    } finally {
      await server.stop();
      await server.database.drop();
    }
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
  const SPEC_OF_GROUP: Record<string, string> = {
    ordering: 'ordering',
    'cursor echo': 'cursor-echo',
    scoping: 'scoping',
    limits: 'limits',
    envelope: 'envelope',
    'no side effects': 'side-effects',
  };
  const specOf = (rule: string) => `api/${SPEC_OF_GROUP[rule.split(' › ')[0]!]!}\\.spec`;
  for (const [breakage, rule] of cases) {
    it(`catches ${breakage}`, async () => {
      const proxy = await startBrokenProxy(server.url, breakage, {
        full: keys.EVENT_FEED_KEY,
        restricted: keys.EVENT_FEED_RESTRICTED_KEY,
        write: keys.EVENT_FEED_WRITE_KEY,
      });
      const front = await streamsAround(proxy.url, server.url);
      try {
        // Only the rule's own spec file: the other checks (long-polls and streams hold for seconds) have nothing to catch here.
        const result = await runKit(front.url, keys, { specs: [specOf(rule)] });
        assert.match(result.output, /^Conformance: FAILED/m, 'the closing line says the run failed');
        assert.notEqual(result.code, 0, `the kit passed a deployment with ${breakage}`);
        assert.ok(result.failed.includes(rule), `expected "${rule}" among the failures: ${JSON.stringify(result.failed)}`);
      } finally {
        await front.close();
        await proxy.close();
      }
    });
  }
});
