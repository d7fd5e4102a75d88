/*
 * Postgres keeps events partitioned by week and prunes by dropping weeks (postgres/partitions.ts,
 * postgres/partition-pruning.ts): what a client relies on across a drop (the expired-cursor rule,
 * restricted keys' watermarks, webhook deliveries, list_events), what the drop costs, and event
 * ids staying unique across partitions when two appends of one id straddle a week's end.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { pruneExpired } from '../src/app/retention-schedule.ts';
import { listPartitions, WEEK_MS, weekStart } from '../src/store/postgres/partitions.ts';
import { postgresRows } from '../src/store/postgres/rows.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const DAY_MS = 86_400_000;
const postgres = (await databaseKinds())[1]!;

describe('events partitioned by week on Postgres', { skip: postgres.skip && 'Postgres unreachable (see notice above)' }, () => {
  let server: TestServer;
  // Tuesday noon of some week: far from the week's ends unless a test moves it there.
  const clock = new FakeClock(weekStart(Date.parse('2026-03-03T12:00:00Z')) + DAY_MS + 12 * 3600_000);
  before(async () => {
    server = await startTestServer(
      await postgres.create(),
      { PRUNE_INTERVAL_SECONDS: '0', WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '3600000' },
      { clock },
    );
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  const partitionNames = async () => (await listPartitions(server.db)).map((p) => p.name);
  const emit = async (key: string, event: unknown) => {
    const res = await server.post('/v1/emit_event', event, key);
    assert.ok(res.status === 201 || res.status === 200, res.text);
    return res.json.event.id as string;
  };

  it('a fresh database has a partitioned events table whose weeks are made as events arrive', async () => {
    const [table] = await postgresRows<{ relkind: string }>(server.db, "SELECT relkind FROM pg_class WHERE oid = 'events'::regclass", []);
    assert.equal(table!.relkind, 'p', 'events is a partitioned table');
    const [key] = await postgresRows<{ key: string }>(server.db, "SELECT pg_get_partkeydef('events'::regclass) AS key", []);
    assert.equal(key!.key, 'RANGE (stored_at)');
    const ws = await server.workspace();
    const { key: writer } = await server.key(ws, ['read', 'write']);
    await emit(writer, sampleEvent('mbx_a', 0));
    const week = weekStart(clock.now().getTime());
    const partitions = await listPartitions(server.db);
    assert.ok(
      partitions.some((p) => p.from === week && p.to === week + WEEK_MS),
      JSON.stringify(partitions),
    );
    // Each has its own unique indexes, and the parent's others.
    const indexes = await postgresRows<{ indexdef: string }>(server.db, `SELECT indexdef FROM pg_indexes WHERE tablename = ?`, [
      partitions.find((p) => p.from === week)!.name,
    ]);
    const defs = indexes.map((i) => i.indexdef.replace(/^.* USING btree /, ''));
    for (const expected of [
      '(workspace_id, seq)',
      '(workspace_id, id)',
      '(workspace_id, mailbox_id, seq)',
      '(workspace_id, type, seq)',
      '(workspace_id, occurred_at_ms, seq)',
    ]) {
      assert.ok(defs.includes(expected), `${expected} in ${defs.join('; ')}`);
    }
  });

  it('pruning drops whole weeks past retention, and readers, restricted keys, deliveries and list_events carry on', async () => {
    const ws = await server.workspace();
    const { key: writer } = await server.key(ws, ['read', 'write', 'admin']);
    const { key: reader } = await server.key(ws, ['read']);
    const { key: boxA } = await server.key(ws, ['read'], ['mbx_a']);
    const { key: boxQuiet } = await server.key(ws, ['read'], ['mbx_quiet']);
    const hook = await server.post('/v1/set_webhook', { url: 'http://127.0.0.1:9/hook' }, writer);
    assert.equal(hook.status, 200, hook.text);

    // Week 1: 3 events (mbx_a, mbx_quiet, mbx_a). Week 3: 2 events (mbx_a). Then 38 days after week 1.
    const old = [
      await emit(writer, sampleEvent('mbx_a', 1)),
      await emit(writer, sampleEvent('mbx_quiet', 2)),
      await emit(writer, sampleEvent('mbx_a', 3)),
    ];
    const quietCursor = (await server.post('/v1/event_feed', {}, boxQuiet)).json.next_cursor;
    const aAfterFirst = (await server.post('/v1/event_feed', { limit: 1 }, boxA)).json.next_cursor;
    const wholeAfterFirst = (await server.post('/v1/event_feed', { limit: 1 }, reader)).json.next_cursor;
    const wholeAfterOld = (await server.post('/v1/event_feed', {}, reader)).json.next_cursor;
    const firstWeek = (await listPartitions(server.db)).find((p) => p.from <= clock.now().getTime() && clock.now().getTime() < p.to)!;
    clock.advanceDays(14);
    const recent = [await emit(writer, sampleEvent('mbx_a', 4)), await emit(writer, sampleEvent('mbx_a', 5))];
    assert.equal(Number((await server.db('webhook_deliveries').where({ workspace_id: ws }).count({ n: '*' }).first())!.n), 5);
    clock.advanceDays(24); // the first week ended more than 30 days ago; the third did not

    const results = await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 1000 });
    assert.deepEqual(
      results.find((r) => r.workspaceId === ws),
      { workspaceId: ws, deleted: 3, prunedThrough: 3 },
    );
    assert.ok(!(await partitionNames()).includes(firstWeek.name), 'the first week was dropped');
    assert.equal(Number((await server.db('events').where({ workspace_id: ws }).count({ n: '*' }).first())!.n), 2);

    // Whole feed: starts at the oldest retained event; a cursor inside the dropped week expired; one after it did not.
    assert.deepEqual(
      (await server.post('/v1/event_feed', {}, reader)).json.events.map((e: { id: string }) => e.id),
      recent,
    );
    const expired = await server.post('/v1/event_feed', { after: wholeAfterFirst }, reader);
    assert.equal(expired.status, 400);
    assert.match(expired.json.error.message, /expired/);
    assert.deepEqual(
      (await server.post('/v1/event_feed', { after: wholeAfterOld }, reader)).json.events.map((e: { id: string }) => e.id),
      recent,
    );
    // Restricted keys: mbx_a missed its third event (pruned after its cursor); mbx_quiet had read everything of its own.
    const missed = await server.post('/v1/event_feed', { after: aAfterFirst }, boxA);
    assert.equal(missed.status, 400);
    assert.match(missed.json.error.message, /expired/);
    assert.deepEqual((await server.post('/v1/event_feed', { after: quietCursor }, boxQuiet)).json, {
      events: [],
      next_cursor: quietCursor,
    });
    const watermarks = await server.db('feed_retention_mailboxes').where({ workspace_id: ws }).orderBy('mailbox_id');
    assert.deepEqual(
      watermarks.map((w: { mailbox_id: string; pruned_through: string }) => [w.mailbox_id, Number(w.pruned_through)]),
      [
        ['mbx_a', 3],
        ['mbx_quiet', 2],
      ],
    );
    // The dropped events' deliveries went with them.
    const deliveries = await server.db('webhook_deliveries').where({ workspace_id: ws }).orderBy('event_seq');
    assert.deepEqual(
      deliveries.map((d: { event_id: string }) => d.event_id),
      recent,
    );
    // list_events sees what is left, newest first.
    const listed = await server.post('/v1/list_events', {}, reader);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.json.events.map((e: { id: string }) => e.id),
      [...recent].reverse(),
    );
    assert.ok(old.every((id) => !listed.text.includes(id)));

    // Pruning again drops nothing more.
    const again = await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 1000 });
    assert.equal(
      again.find((r) => r.workspaceId === ws),
      undefined,
    );
  });

  it('dropping a week of 20,000 events writes almost no WAL (a DELETE would write megabytes)', async () => {
    const ws = await server.workspace();
    const { key: reader } = await server.key(ws, ['read']);
    const events = Array.from({ length: 500 }, (_, i) => sampleEvent(`mbx_${i % 20}`, i));
    for (let i = 0; i < 40; i++)
      await server.db.transaction((trx) =>
        publish(
          trx,
          ws,
          events.map((e) => ({ ...e })),
          clock,
        ),
      );
    const week = (await listPartitions(server.db)).find((p) => p.from <= clock.now().getTime() && clock.now().getTime() < p.to)!;
    clock.advanceDays(38);
    const lsn = async () => (await postgresRows<{ lsn: string }>(server.db, 'SELECT pg_current_wal_lsn()::text AS lsn', []))[0]!.lsn;
    const start = await lsn();
    const results = await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 1000 });
    const [wal] = await postgresRows<{ bytes: string }>(server.db, 'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ?::pg_lsn) AS bytes', [
      start,
    ]);
    assert.equal(results.find((r) => r.workspaceId === ws)?.deleted, 20_000);
    assert.ok(!(await partitionNames()).includes(week.name));
    // A DELETE of these rows writes several megabytes here; the drop, the catalog and the watermarks.
    assert.ok(Number(wal!.bytes) < 500_000, `${wal!.bytes} bytes of WAL`);
    const page = await server.post('/v1/event_feed', {}, reader);
    assert.deepEqual(page.json.events, []);
  });

  it('an event id stays unique when its two appends straddle the end of a week', async () => {
    const ws = await server.workspace();
    const { key: writer } = await server.key(ws, ['read', 'write']);
    await emit(writer, sampleEvent('mbx_a', 0));
    // The last minute of this week, for the library's transaction; the next week for the server.
    const weekEnd = weekStart(clock.now().getTime()) + WEEK_MS;
    const lastMinute = new FakeClock(weekEnd - 60_000);
    await emit(writer, sampleEvent('mbx_a', 1)); // this week's partition and the next one exist
    const event = { ...sampleEvent('mbx_a', 2), id: 'evt_01JDSTRADD1EWEEKEND0000000', occurred_at: '2026-03-01T10:00:00.000Z' };

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const holds = new Promise<void>((resolve) => (holding = resolve));
    const first = server.db.transaction(async (trx) => {
      const published = await publish(trx, ws, [event], lastMinute);
      holding();
      await held; // stored in this week's partition, not committed yet
      return published;
    });
    await holds;
    clock.advanceDays(weekEnd - clock.now().getTime() > 0 ? Math.ceil((weekEnd - clock.now().getTime()) / DAY_MS) : 0);
    assert.ok(clock.now().getTime() >= weekEnd, 'the server is in the next week');
    // The emit looks the id up (not committed: not found), then waits for the workspace's counter.
    const second = server.post('/v1/emit_event', event, writer);
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    const [stored] = await first;
    assert.equal(stored!.created, true);
    const replay = await second;
    assert.equal(replay.status, 200, `the second append is a replay of the first (200, not 201): ${replay.text}`);
    assert.equal(replay.json.event.id, event.id);
    const rows = await server.db('events').where({ workspace_id: ws, id: event.id });
    assert.equal(rows.length, 1, 'stored once');
  });
});
