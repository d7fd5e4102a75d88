/**
 * What one workspace's admin can make the webhook tables hold: redeliver_webhook bounded per call,
 * deduplicated against pending deliveries and refused past a quota of pending deliveries per
 * endpoint; deliveries and attempts pruned; the cap of endpoints per workspace held under
 * concurrent creations.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { MAX_ENDPOINTS_PER_WORKSPACE } from '../src/operations/set-webhook.ts';
import { pruneExpired } from '../src/app/retention-schedule.ts';
import { migrationSource } from '../src/store/common/migrate.ts';
import { ATTEMPTS_KEPT_PER_ENDPOINT } from '../src/store/common/webhook-pruning.ts';
import { openStore } from '../src/store/open-store.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const PENDING_QUOTA = 50;
// A dispatch interval no test waits for: the endpoints here are disabled or unreachable anyway.
const ENV = { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '3600000', WEBHOOK_REDELIVER_MAX_PENDING: String(PENDING_QUOTA) };
const URL_A = 'http://127.0.0.1:9/a';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`webhook limits on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    const clock = new FakeClock(Date.now());
    before(async () => {
      server = await startTestServer(await create(), ENV, { clock });
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    /** A workspace with `events` events and a disabled endpoint (so the emits queue nothing for it). */
    async function workspaceWithEvents(events: number) {
      const ws = await server.workspace();
      const admin = (await server.key(ws, ['admin'])).key;
      const created = await server.post('/v1/set_webhook', { url: URL_A, enabled: false }, admin);
      assert.equal(created.status, 200, created.text);
      await server.db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: events }, (_, i) => sampleEvent('mbx_a', i)),
          clock,
        ),
      );
      const pending = async () => (await server.post('/v1/list_webhooks', {}, admin)).json.webhooks[0].pending_deliveries as number;
      return { ws, admin, pending };
    }

    it('redeliver_webhook schedules at most 1,000 events per call', async () => {
      const { admin } = await workspaceWithEvents(1);
      const tooMany = await server.post('/v1/redeliver_webhook', { url: URL_A, limit: 1001 }, admin);
      assert.equal(tooMany.status, 400, tooMany.text);
      assert.equal(tooMany.json.error.code, 'invalid_argument');
      assert.match(tooMany.json.error.message, /limit/);
      assert.equal((await server.post('/v1/redeliver_webhook', { url: URL_A, limit: 1000 }, admin)).status, 200);
    });

    it('does not queue an event twice for an endpoint while it is pending', async () => {
      const { admin, pending } = await workspaceWithEvents(10);
      const first = await server.post('/v1/redeliver_webhook', { url: URL_A }, admin);
      assert.equal(first.json.scheduled, 10);
      for (let i = 0; i < 5; i++) {
        const again = await server.post('/v1/redeliver_webhook', { url: URL_A }, admin);
        assert.equal(again.status, 200, again.text);
        assert.equal(again.json.scheduled, 0, 'already pending: not scheduled again');
      }
      assert.equal(await pending(), 10);
      const rows = await server.db('webhook_deliveries').count({ n: '*' }).first();
      assert.ok(Number(rows?.n) >= 10);
    });

    it('refuses to queue beyond the pending quota of an endpoint, with rate_limited and Retry-After', async () => {
      const { admin, pending } = await workspaceWithEvents(PENDING_QUOTA + 10);
      const first = await server.post('/v1/redeliver_webhook', { url: URL_A, limit: 1000 }, admin);
      assert.equal(first.status, 200, first.text);
      assert.equal(first.json.scheduled, PENDING_QUOTA, 'filled up to the quota');
      const next = await server.post('/v1/redeliver_webhook', { url: URL_A, after: first.json.next_cursor }, admin);
      assert.equal(next.status, 429, next.text);
      assert.equal(next.json.error.code, 'rate_limited');
      assert.match(next.json.error.message, new RegExp(`${PENDING_QUOTA} pending deliveries`));
      assert.ok(Number(next.headers.get('retry-after')) >= 1, 'Retry-After');
      assert.equal(await pending(), PENDING_QUOTA);
      // Repeated calls from the start add nothing either.
      for (let i = 0; i < 3; i++)
        assert.equal((await server.post('/v1/redeliver_webhook', { url: URL_A, limit: 1000 }, admin)).status, 429);
      assert.equal(await pending(), PENDING_QUOTA);
    });

    it('prunes the deliveries of pruned events, and keeps a bounded number of attempts per endpoint', async () => {
      const { ws, admin, pending } = await workspaceWithEvents(5);
      assert.equal((await server.post('/v1/redeliver_webhook', { url: URL_A }, admin)).json.scheduled, 5);
      clock.advanceDays(38); // past retention, whole weeks included (Postgres drops weeks)
      await server.db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_a', 100), sampleEvent('mbx_a', 101)], clock));
      assert.equal((await server.post('/v1/redeliver_webhook', { url: URL_A }, admin)).json.scheduled, 2);
      assert.equal(await pending(), 7);

      const endpointId = (await server.db('webhook_endpoints').where({ workspace_id: ws }).first()).id;
      const now = clock.now().getTime();
      const extra = 30;
      const attempts = Array.from({ length: ATTEMPTS_KEPT_PER_ENDPOINT + extra }, (_, i) => ({
        endpoint_id: endpointId,
        event_id: `evt_${i}`,
        attempt: 1,
        started_at: now - 1000 + i,
        status: 500,
        latency_ms: 1,
        error: 'answered 500',
        outcome: 'retry',
        next_retry_at: now,
      }));
      for (let i = 0; i < attempts.length; i += 200) await server.db('webhook_attempts').insert(attempts.slice(i, i + 200));

      await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 2 });
      assert.equal(await pending(), 2, 'the deliveries of the five pruned events are gone');
      const left = await server.db('webhook_attempts').where({ endpoint_id: endpointId }).select('event_id').orderBy('id');
      assert.equal(left.length, ATTEMPTS_KEPT_PER_ENDPOINT);
      assert.equal(left[0].event_id, `evt_${extra}`, 'the oldest attempts went first');
      const shown = (await server.post('/v1/list_webhooks', {}, admin)).json.webhooks[0].recent_attempts;
      assert.equal(shown[0].event_id, `evt_${attempts.length - 1}`, 'the most recent are kept');
    });

    it(`holds the cap of ${MAX_ENDPOINTS_PER_WORKSPACE} endpoints under 40 concurrent creations`, async () => {
      // A few rounds: each is a race the old count-then-insert lost only sometimes.
      for (let round = 0; round < 4; round++) {
        const ws = await server.workspace();
        const admin = (await server.key(ws, ['admin'])).key;
        const answers = await Promise.all(
          Array.from({ length: 40 }, (_, i) => server.post('/v1/set_webhook', { url: `http://127.0.0.1:9/cap-${i}` }, admin)),
        );
        const created = answers.filter((a) => a.status === 200);
        const refused = answers.filter((a) => a.status !== 200);
        assert.equal(created.length, MAX_ENDPOINTS_PER_WORKSPACE, `round ${round}: created ${created.length}`);
        for (const answer of refused) {
          assert.equal(answer.status, 400, answer.text);
          assert.equal(answer.json.error.code, 'invalid_argument');
          assert.match(answer.json.error.message, new RegExp(`at most ${MAX_ENDPOINTS_PER_WORKSPACE} webhook endpoints`));
        }
        const stored = await server.db('webhook_endpoints').count({ n: '*' }).where({ workspace_id: ws }).first();
        assert.equal(Number(stored?.n), MAX_ENDPOINTS_PER_WORKSPACE);
      }
    });
  });

  describe(`migration 006 on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    it('removes duplicate pending deliveries, keeping the first, before making them unique', async () => {
      const database = await create();
      const store = openStore(database.url);
      const db = store.knex;
      try {
        for (const name of ['001_initial', '002_retention', '003_webhooks_and_search', '004_list_events_index', '005_key_change_notify'])
          await db.migrate.up({ migrationSource: migrationSource(kind), name });
        await db('workspaces').insert({ id: 'ws_1', name: 'old', verified: false, created_at: 0 });
        await db('webhook_endpoints').insert({
          id: 'whe_1',
          workspace_id: 'ws_1',
          url: URL_A,
          event_types: '[]',
          enabled: false,
          secret: 'whsec_AAAA',
          created_at: 0,
          updated_at: 0,
        });
        const row = (seq: number, attempts: number) => ({
          endpoint_id: 'whe_1',
          workspace_id: 'ws_1',
          event_seq: seq,
          event_id: `evt_${seq}`,
          attempts,
          next_attempt_at: 0,
          created_at: 0,
        });
        await db('webhook_deliveries').insert([row(1, 3), row(1, 0), row(2, 0), row(1, 0), row(3, 0), row(2, 0)]);
        await store.migrate();
        const left = await db('webhook_deliveries').select('event_seq', 'attempts').orderBy('event_seq');
        assert.deepEqual(
          left.map((r: { event_seq: number | string; attempts: number | string }) => [Number(r.event_seq), Number(r.attempts)]),
          [
            [1, 3],
            [2, 0],
            [3, 0],
          ],
        );
        await assert.rejects(db('webhook_deliveries').insert(row(3, 0)), 'the pair is unique from now on');
      } finally {
        await store.close();
        await database.drop();
      }
    });
  });
}
