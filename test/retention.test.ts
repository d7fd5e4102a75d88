import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/app/config.ts';
import { ApiError } from '../src/base/errors.ts';
import { assertCursorNotExpired } from '../src/feed/expiry.ts';
import { FeedScope } from '../src/feed/scope.ts';
import { pruneExpired } from '../src/app/retention-schedule.ts';
import { pruneWorkspace } from '../src/store/common/retention.ts';
import { kindNamed, openStore } from '../src/store/open-store.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import { startTestServer, type TestServer } from './support/server.ts';

describe('RETENTION_DAYS', () => {
  it('defaults to 30 and refuses less than 30 with a clear message', () => {
    assert.equal(loadConfig({}).retentionDays, 30);
    assert.equal(loadConfig({ RETENTION_DAYS: '90' }).retentionDays, 90);
    assert.throws(
      () => loadConfig({ RETENTION_DAYS: '29' }),
      (err: Error) => err instanceof ConfigError && /at least 30/.test(err.message),
    );
    assert.throws(() => loadConfig({ RETENTION_DAYS: 'soon' }), ConfigError);
  });

  it('refuses to start the service below 30 days', async () => {
    const result = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        ['bin/event-feed.js', 'serve'],
        { env: { ...process.env, RETENTION_DAYS: '7', DATABASE_URL: 'sqlite::memory:' } },
        (error, _out, stderr) => resolve({ code: error ? Number((error as any).code) : 0, stderr }),
      ),
    );
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /RETENTION_DAYS must be at least 30/);
  });
});

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`retention on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    const clock = new FakeClock();
    const sql = kindNamed(kind).sql;
    before(async () => {
      server = await startTestServer(await create(), {}, { clock });
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    const emitMany = async (key: string, mailboxes: Array<string | undefined>) => {
      const ids: string[] = [];
      for (const [i, mailbox] of mailboxes.entries()) {
        const res = await server.post('/v1/emit_event', sampleEvent(mailbox, i), key);
        assert.equal(res.status, 201, res.text);
        ids.push(res.json.event.id);
      }
      return ids;
    };

    it('prunes what is older than the period, starts the feed at the oldest retained event, and refuses expired cursors', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const old = await emitMany(key, ['mbx_a', 'mbx_b', 'mbx_a']);
      const afterOld = (await server.post('/v1/event_feed', {}, key)).json.next_cursor; // after the three old events
      const firstCursor = (await server.post('/v1/event_feed', { limit: 1 }, key)).json.next_cursor;
      clock.advanceDays(20);
      const recent = await emitMany(key, ['mbx_a', 'mbx_b']);
      // The first three are now 38 days old, the others 18. (Postgres drops a week once its last
      // moment is past retention: events stay 30 to 37 days; SQLite deletes them at 30.)
      clock.advanceDays(18);

      const results = await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 2 });
      assert.equal(results.find((r) => r.workspaceId === ws)?.deleted, 3);

      const page = await server.post('/v1/event_feed', {}, key);
      assert.deepEqual(
        page.json.events.map((e: { id: string }) => e.id),
        recent,
        'no after: the oldest retained event first',
      );

      const expired = await server.post('/v1/event_feed', { after: firstCursor }, key);
      assert.equal(expired.status, 400);
      assert.equal(expired.json.error.code, 'invalid_argument');
      assert.match(expired.json.error.message, /expired/);
      assert.match(expired.json.error.message, /restart without "after"/);

      // The cursor after the last pruned event lost nothing: it still works.
      const resumed = await server.post('/v1/event_feed', { after: afterOld }, key);
      assert.equal(resumed.status, 200);
      assert.deepEqual(
        resumed.json.events.map((e: { id: string }) => e.id),
        recent,
      );
      assert.ok(old.length === 3);
    });

    it("tells a restricted key its cursor expired only when one of its mailboxes' events was pruned", async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const quiet = (await server.key(ws, ['read'], ['mbx_quiet'])).key;
      const busy = (await server.key(ws, ['read'], ['mbx_busy'])).key;
      await emitMany(key, ['mbx_quiet']);
      const quietCursor = (await server.post('/v1/event_feed', {}, quiet)).json.next_cursor;
      await emitMany(key, ['mbx_busy', 'mbx_busy']);
      const busyFirst = (await server.post('/v1/event_feed', { limit: 1 }, busy)).json.next_cursor;
      await emitMany(key, ['mbx_busy']);
      clock.advanceDays(38);
      const fresh = await emitMany(key, ['mbx_busy']);
      // Everything but the last event is past retention, including busy events after busyFirst.
      await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 1000 });

      // The quiet mailbox's own event was pruned too, but its key had already read it: nothing missed.
      const quietRead = await server.post('/v1/event_feed', { after: quietCursor }, quiet);
      assert.equal(quietRead.status, 200, quietRead.text);
      assert.deepEqual(quietRead.json, { events: [], next_cursor: quietCursor });

      const busyRead = await server.post('/v1/event_feed', { after: busyFirst }, busy);
      assert.equal(busyRead.status, 400, 'the busy key missed pruned events after its cursor');
      assert.match(busyRead.json.error.message, /expired/);
      const restart = await server.post('/v1/event_feed', {}, busy);
      assert.deepEqual(
        restart.json.events.map((e: { id: string }) => e.id),
        fresh,
      );
    });

    it('gives an empty feed a starting cursor that does not expire at once after pruning', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      await emitMany(key, ['mbx_a', 'mbx_a']);
      clock.advanceDays(40);
      await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 1000 });
      const empty = await server.post('/v1/event_feed', {}, key);
      assert.deepEqual(empty.json.events, []);
      const later = await emitMany(key, ['mbx_a']);
      const next = await server.post('/v1/event_feed', { after: empty.json.next_cursor }, key);
      assert.equal(next.status, 200, next.text);
      assert.deepEqual(
        next.json.events.map((e: { id: string }) => e.id),
        later,
      );
    });

    it('prunes in bounded batches, and pruning again changes nothing', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      await emitMany(
        key,
        Array.from({ length: 7 }, () => 'mbx_a'),
      );
      clock.advanceDays(31);
      const first = await pruneWorkspace(server.db, sql, ws, clock.now().getTime() - 30 * 86400000, 3);
      assert.deepEqual({ deleted: first.deleted, through: first.prunedThrough }, { deleted: 7, through: 7 });
      const again = await pruneWorkspace(server.db, sql, ws, clock.now().getTime() - 30 * 86400000, 3);
      assert.equal(again.deleted, 0);
      const counter = await server.db('feed_counters').where({ workspace_id: ws }).first();
      assert.equal(Number(counter.last_seq), 7, 'pruning never touches the sequence');
    });
  });
}

describe('the expiry check after a page', () => {
  // A database that can no longer answer: any watermark read fails, so the tests see whether one was made.
  const closedDb = async () => {
    const store = openStore('sqlite::memory:');
    await store.close();
    return store;
  };

  it('skips the watermark when an unrestricted page starts right after the cursor', async () => {
    const db = await closedDb();
    await assertCursorNotExpired(db, 'ws_x', FeedScope.WHOLE, 40, { count: 3, lastSeq: 43 });
  });

  it('reads the watermark when the page cannot prove the cursor whole', async () => {
    const db = await closedDb();
    const cases: Array<[readonly string[] | null, { count: number; lastSeq: number | undefined }]> = [
      [null, { count: 3, lastSeq: 45 }], // starts past afterSeq + 1: events in between may be pruned
      [null, { count: 0, lastSeq: undefined }], // nothing after the cursor, or everything after it pruned
      [['mbx_a'], { count: 3, lastSeq: 43 }], // a restricted key's seqs need not be consecutive
    ];
    for (const [mailboxes, page] of cases) {
      await assert.rejects(
        assertCursorNotExpired(db, 'ws_x', FeedScope.of(mailboxes), 40, page),
        (err: Error) => !(err instanceof ApiError),
        `page ${JSON.stringify(page)} for ${JSON.stringify(mailboxes)} should read the watermark`,
      );
    }
  });
});

describe('pruning actually runs: on its schedule in the server, and with `event-feed prune`', () => {
  const DAY = 24 * 3600 * 1000;
  const feedCount = async (server: TestServer, key: string) =>
    (await server.post('/v1/event_feed', { limit: 500 }, key)).json.events.length;

  /** A server pruning every `interval` seconds, holding 3 events that its clock has made 31 days old. */
  async function serverWithOldEvents(interval: string) {
    const clock = new FakeClock(Date.now());
    const { sqliteDatabase } = await import('./support/databases.ts');
    const server = await startTestServer(await sqliteDatabase(), { PRUNE_INTERVAL_SECONDS: interval }, { clock });
    const ws = await server.workspace();
    const { key } = await server.key(ws, ['read', 'write']);
    for (let i = 0; i < 3; i++) assert.equal((await server.post('/v1/emit_event', sampleEvent('mbx_a', i), key)).status, 201);
    clock.advanceDays(31);
    return { server, key };
  }

  it('the server prunes on its own timer (first run ~1 s after start, then every PRUNE_INTERVAL_SECONDS)', async () => {
    const { server, key } = await serverWithOldEvents('1');
    try {
      const deadline = Date.now() + 5000;
      while ((await feedCount(server, key)) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.equal(await feedCount(server, key), 0, 'no scheduled prune ran within 5 s');
    } finally {
      await server.stop();
      await server.database.drop();
    }
  });

  it('with PRUNE_INTERVAL_SECONDS=0 the server never prunes on its own (cron runs `event-feed prune`)', async () => {
    const { server, key } = await serverWithOldEvents('0');
    try {
      await new Promise((r) => setTimeout(r, 1500)); // past the first scheduled run (~1 s after start)
      assert.equal(await feedCount(server, key), 3);
    } finally {
      await server.stop();
      await server.database.drop();
    }
  });

  it('`event-feed prune` deletes what is past RETENTION_DAYS and keeps the rest', async () => {
    const { sqliteDatabase } = await import('./support/databases.ts');
    const database = await sqliteDatabase();
    // Events stored 40 days ago (the server's clock), then one stored now.
    const clock = new FakeClock(Date.now() - 40 * DAY);
    const server = await startTestServer(database, { PRUNE_INTERVAL_SECONDS: '3600' }, { clock });
    const ws = await server.workspace();
    const { key } = await server.key(ws, ['read', 'write']);
    try {
      for (let i = 0; i < 3; i++) assert.equal((await server.post('/v1/emit_event', sampleEvent('mbx_a', i), key)).status, 201);
      // One stored now (the server's own clock stays 40 days back, so its timer prunes nothing).
      const { publishInTransaction } = await import('../src/feed/publish.ts');
      await server.db.transaction((trx) => publishInTransaction(trx, ws, [sampleEvent('mbx_a', 9)], new Date()));
      assert.equal(await feedCount(server, key), 4);
      const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: database.url, PRUNE_BATCH_SIZE: '2' };
      delete env.NODE_OPTIONS;
      const run = await new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
        execFile(process.execPath, ['bin/event-feed.js', 'prune'], { env, timeout: 30_000 }, (err, stdout, stderr) =>
          done({ code: err ? Number((err as any).code) : 0, stdout, stderr }),
        ),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(JSON.parse(run.stdout).deleted, 3, run.stdout);
      assert.equal(await feedCount(server, key), 1);
      const tooShort = await new Promise<{ code: number; stderr: string }>((done) =>
        execFile(
          process.execPath,
          ['bin/event-feed.js', 'prune'],
          { env: { ...env, RETENTION_DAYS: '7' }, timeout: 30_000 },
          (err, _o, stderr) => done({ code: err ? Number((err as any).code) : 0, stderr }),
        ),
      );
      assert.notEqual(tooShort.code, 0);
      assert.match(tooShort.stderr, /RETENTION_DAYS must be at least 30/);
    } finally {
      await server.stop();
      await database.drop();
    }
  });
});
