import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrationSource } from '../src/store/common/migrate.ts';
import { openStore } from '../src/store/open-store.ts';
import { databaseKinds } from './support/databases.ts';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`migrations on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    it('upgrade a database holding events, backfilling what later migrations add', async () => {
      const database = await create();
      const store = openStore(database.url);
      const db = store.knex;
      try {
        await db.migrate.up({ migrationSource, name: '001_initial' });
        await db.migrate.up({ migrationSource, name: '002_retention' });
        await db('workspaces').insert({ id: 'ws_01JD4S3QW1Y9V5K2M8N7P6R4T3', name: 'old', verified: false, created_at: 0 });
        const envelope = (at: string) => JSON.stringify({ id: 'evt_x', type: 'mail.sent', occurred_at: at, account: 'ws_x', subject: { person: { email: 'a@b.fr' }, refs: {} }, data: {}, v: 1 });
        await db('events').insert([
          { workspace_id: 'ws_01JD4S3QW1Y9V5K2M8N7P6R4T3', seq: 1, id: 'evt_a', type: 'mail.sent', stored_at: 0, envelope: envelope('2026-11-21T09:14:03.512Z') },
          { workspace_id: 'ws_01JD4S3QW1Y9V5K2M8N7P6R4T3', seq: 2, id: 'evt_b', type: 'mail.sent', stored_at: 0, envelope: envelope('1999-12-31T23:59:59.999Z') },
        ]);
        const applied = await store.migrate();
        assert.ok(applied.includes('003_webhooks_and_search'), String(applied));
        const rows = await db('events').select('id', 'occurred_at_ms').orderBy('seq');
        assert.deepEqual(
          rows.map((r: { id: string; occurred_at_ms: number | string }) => [r.id, Number(r.occurred_at_ms)]),
          [['evt_a', Date.parse('2026-11-21T09:14:03.512Z')], ['evt_b', Date.parse('1999-12-31T23:59:59.999Z')]],
        );
        assert.deepEqual(await store.migrate(), [], 'then up to date');
      } finally {
        await store.close();
        await database.drop();
      }
    });
  });
}
