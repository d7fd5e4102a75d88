import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrationSource as migrationSourceOf } from '../src/store/common/migrate.ts';
import { openStore } from '../src/store/open-store.ts';
import { pruneExpired } from '../src/app/retention-schedule.ts';
import { postgresRows } from '../src/store/postgres/rows.ts';
import { listPartitions, WEEK_MS, weekStart } from '../src/store/postgres/partitions.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import { startTestServer } from './support/server.ts';

for (const { kind, create, skip } of await databaseKinds()) {
  const migrationSource = migrationSourceOf(kind);
  describe(`migrations on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    it('upgrade a database holding events, backfilling what later migrations add', async () => {
      const database = await create();
      const store = openStore(database.url);
      const db = store.knex;
      try {
        await db.migrate.up({ migrationSource, name: '001_initial' });
        await db.migrate.up({ migrationSource, name: '002_retention' });
        await db('workspaces').insert({ id: 'ws_01JD4S3QW1Y9V5K2M8N7P6R4T3', name: 'old', verified: false, created_at: 0 });
        const envelope = (at: string) =>
          JSON.stringify({
            id: 'evt_x',
            type: 'mail.sent',
            occurred_at: at,
            account: 'ws_x',
            subject: { person: { email: 'a@b.fr' }, refs: {} },
            data: {},
            v: 1,
          });
        await db('events').insert([
          {
            workspace_id: 'ws_01JD4S3QW1Y9V5K2M8N7P6R4T3',
            seq: 1,
            id: 'evt_a',
            type: 'mail.sent',
            stored_at: 0,
            envelope: envelope('2026-11-21T09:14:03.512Z'),
          },
          {
            workspace_id: 'ws_01JD4S3QW1Y9V5K2M8N7P6R4T3',
            seq: 2,
            id: 'evt_b',
            type: 'mail.sent',
            stored_at: 0,
            envelope: envelope('1999-12-31T23:59:59.999Z'),
          },
        ]);
        const applied = await store.migrate();
        assert.ok(applied.includes('003_webhooks_and_search'), String(applied));
        const rows = await db('events').select('id', 'occurred_at_ms').orderBy('seq');
        assert.deepEqual(
          rows.map((r: { id: string; occurred_at_ms: number | string }) => [r.id, Number(r.occurred_at_ms)]),
          [
            ['evt_a', Date.parse('2026-11-21T09:14:03.512Z')],
            ['evt_b', Date.parse('1999-12-31T23:59:59.999Z')],
          ],
        );
        assert.deepEqual(await store.migrate(), [], 'then up to date');
      } finally {
        await store.close();
        await database.drop();
      }
    });

    it(
      'partitions events by week in place (Postgres), keeping every row, and drops the old table as one week past retention',
      { skip: kind !== 'postgres' },
      async () => {
        const DAY = 86_400_000;
        const now = Date.now();
        const database = await create();
        const store = openStore(database.url);
        const db = store.knex;
        const end = weekStart(now + 2 * DAY) + WEEK_MS;
        try {
          // Today's schema (through 008) holding a feed whose first 10 events were pruned row by row,
          // and a workspace whose instance's clock ran 2 days ahead.
          const through008 = {
            ...migrationSource,
            getMigrations: async () => (await migrationSource.getMigrations([] as string[])).filter((name) => name < '009'),
          };
          await db.migrate.latest({ migrationSource: through008 });
          const [w1, w2] = ['ws_01JD4S3QW1Y9V5K2M8N7P6R4A1', 'ws_01JD4S3QW1Y9V5K2M8N7P6R4A2'];
          for (const id of [w1, w2]) await db('workspaces').insert({ id, name: id, verified: true, created_at: 0 });
          await db('feed_counters').insert([
            { workspace_id: w1, last_seq: 300 },
            { workspace_id: w2, last_seq: 5 },
          ]);
          await db('feed_retention').insert({ workspace_id: w1, pruned_through: 10 });
          const row = (workspace: string, seq: number, storedAt: number) => ({
            workspace_id: workspace,
            seq,
            id: `evt_${workspace.slice(-2)}_${seq}`,
            type: 'mail.sent',
            mailbox_id: `mbx_${seq % 3}`,
            occurred_at_ms: storedAt,
            stored_at: storedAt,
            envelope: JSON.stringify({
              id: `evt_${workspace.slice(-2)}_${seq}`,
              type: 'mail.sent',
              occurred_at: new Date(storedAt).toISOString(),
              account: workspace,
              subject: { refs: {} },
              data: {},
              v: 1,
            }),
          });
          await db('events').insert(Array.from({ length: 290 }, (_, i) => row(w1, 11 + i, now - 40 * DAY + i * 3600_000)));
          await db('events').insert(Array.from({ length: 5 }, (_, i) => row(w2, 1 + i, now + 2 * DAY)));

          // From 009 on: every migration after the schema this test built by hand.
          const after008 = (await migrationSource.getMigrations([] as string[])).filter((name) => name >= '009');
          assert.equal(after008[0], '009_events_partitioned_by_week');
          assert.deepEqual(await store.migrate(), after008);

          const [table] = await postgresRows<{ relkind: string }>(db, "SELECT relkind FROM pg_class WHERE oid = 'events'::regclass", []);
          assert.equal(table!.relkind, 'p');
          const [only, ...none] = await listPartitions(db);
          assert.deepEqual(none, []);
          assert.deepEqual(
            { from: only!.from, to: only!.to },
            { from: -Infinity, to: end },
            'the old table is the first partition, up to the end of the newest row’s week',
          );
          const seqs = async (workspace: string) =>
            (await db('events').where({ workspace_id: workspace }).orderBy('seq').select('seq')).map((r: { seq: string }) => Number(r.seq));
          assert.deepEqual(
            await seqs(w1),
            Array.from({ length: 290 }, (_, i) => 11 + i),
            'every row kept',
          );
          assert.deepEqual(await seqs(w2), [1, 2, 3, 4, 5]);
          const counters = await db('feed_counters').orderBy('workspace_id').select('workspace_id', 'last_stored_at');
          assert.deepEqual(
            counters.map((c: { last_stored_at: string }) => Number(c.last_stored_at)),
            [now - 40 * DAY + 289 * 3600_000, now + 2 * DAY],
            'newest stored_at per workspace',
          );
          // Its unique indexes still refuse a second row with the same seq or id.
          await assert.rejects(db('events').insert(row(w1, 11, now)), /duplicate key/);
          await assert.rejects(db('events').insert({ ...row(w1, 999, now), id: 'evt_A1_11' }), /duplicate key/);
        } finally {
          await store.close();
        }

        // The service on the migrated database, two weeks later: new events go to a week of their own.
        const clock = new FakeClock(end + 7 * DAY);
        const server = await startTestServer(database, { PRUNE_INTERVAL_SECONDS: '0' }, { clock });
        try {
          const { key } = await server.key('ws_01JD4S3QW1Y9V5K2M8N7P6R4A1', ['read', 'write']);
          const { key: restricted } = await server.key('ws_01JD4S3QW1Y9V5K2M8N7P6R4A1', ['read'], ['mbx_1']);
          const first = await server.post('/v1/event_feed', { limit: 500 }, key);
          assert.equal(first.json.events.length, 290);
          assert.equal(first.json.events[0].id, 'evt_A1_11', 'from the oldest retained event');
          const cursorAt200 = (await server.post('/v1/event_feed', { limit: 190 }, key)).json.next_cursor;
          const restrictedAtEnd = (await server.post('/v1/event_feed', { limit: 500 }, restricted)).json.next_cursor;
          const emitted = await server.post('/v1/emit_event', sampleEvent('mbx_1', 0), key);
          assert.equal(emitted.status, 201, emitted.text);
          const partitions = await listPartitions(server.db);
          assert.ok(
            partitions.some((p) => p.from === weekStart(clock.now().getTime())),
            'the new event’s week has its partition',
          );
          const [newRow] = await server.db('events').where({ workspace_id: 'ws_01JD4S3QW1Y9V5K2M8N7P6R4A1', seq: 301 }).select('stored_at');
          assert.equal(Number(newRow.stored_at), clock.now().getTime());

          // A month later the old table is past retention: it is dropped, and the watermarks say so.
          clock.advanceDays(31);
          const results = await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 1000 });
          assert.deepEqual(results.map((r) => [r.workspaceId, r.deleted, r.prunedThrough]).sort(), [
            ['ws_01JD4S3QW1Y9V5K2M8N7P6R4A1', 290, 300],
            ['ws_01JD4S3QW1Y9V5K2M8N7P6R4A2', 5, 5],
          ]);
          assert.ok(!(await listPartitions(server.db)).some((p) => p.from === -Infinity), 'the old table is gone');
          const expired = await server.post('/v1/event_feed', { after: cursorAt200 }, key);
          assert.equal(expired.status, 400);
          assert.match(expired.json.error.message, /expired/);
          const rest = await server.post('/v1/event_feed', { after: first.json.next_cursor }, key);
          assert.deepEqual(
            rest.json.events.map((e: { id: string }) => e.id),
            [emitted.json.event.id],
          );
          const restrictedRest = await server.post('/v1/event_feed', { after: restrictedAtEnd }, restricted);
          assert.equal(restrictedRest.status, 200, 'the restricted key had read all of mbx_1 before the drop');
          assert.deepEqual(
            restrictedRest.json.events.map((e: { id: string }) => e.id),
            [emitted.json.event.id],
          );
        } finally {
          await server.stop();
          await database.drop();
        }
      },
    );
  });
}
