/**
 * One workspace's webhooks cannot hold another's back: free dispatch slots go round-robin over
 * workspaces (at most WEBHOOK_SLOTS_PER_WORKSPACE each), a slow or hanging endpoint holds only its
 * own slot and gives it back after its lease budget, and a slot given back is filled at once.
 * Counted, with generous bounds: the victim's deliveries all arrive, early in the order of
 * arrivals or within a few seconds, while per-endpoint emission order holds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor } from './support/webhook-receiver.ts';

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** A workspace with an admin and a writer key, and endpoints on these receivers (created in this order). */
async function tenant(server: TestServer, receivers: Receiver[]) {
  const ws = await server.workspace();
  const admin = (await server.key(ws, ['admin'])).key;
  const writer = (await server.key(ws, ['read', 'write'])).key;
  for (const receiver of receivers) {
    const created = await server.post('/v1/set_webhook', { url: receiver.url }, admin);
    assert.equal(created.status, 200, created.text);
  }
  return { ws, writer };
}

/** `count` events in one transaction: every endpoint of the workspace owes each a delivery. */
async function backlog(server: TestServer, ws: string, count: number): Promise<string[]> {
  const published = await server.db.transaction((trx) =>
    publish(
      trx,
      ws,
      Array.from({ length: count }, (_, i) => sampleEvent('mbx_a', i)),
    ),
  );
  return published.map((event) => (JSON.parse(event.envelope) as { id: string }).id);
}

const slow = (ms: number) => (_r: unknown, _n: number, res: import('node:http').ServerResponse) => void setTimeout(() => res.end(), ms);

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`fair webhook dispatch on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    it("serves another workspace's endpoint at once, not after the 16 endpoints of a workspace with a backlog", async () => {
      // The test runs each dispatch itself (tick); all endpoints answer at once.
      const server = await startTestServer(await create(), {
        WEBHOOKS_ALLOW_INSECURE: '1',
        WEBHOOK_DISPATCH_INTERVAL_MS: '3600000',
        WEBHOOK_TIMEOUT_MS: '2000',
      });
      const arrivals: string[] = [];
      const record = (who: string) => (_r: unknown, _n: number, res: import('node:http').ServerResponse) => {
        arrivals.push(who);
        res.end();
      };
      const busy = await Promise.all(Array.from({ length: 16 }, (_, i) => startReceiver(record(`busy-${i}`))));
      const victim = await startReceiver(record('victim'));
      try {
        const noisy = await tenant(server, busy);
        const quiet = await tenant(server, [victim]);
        const ids = await backlog(server, noisy.ws, 30);
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), quiet.writer);
        for (let pass = 0; pass < 20 && !arrivals.includes('victim'); pass++) await server.webhooks.tick();
        const position = arrivals.indexOf('victim');
        assert.ok(position >= 0, 'the victim got its delivery');
        assert.ok(
          position < 40,
          `the victim's delivery went out among the first (it was number ${position + 1} of ${arrivals.length}; 16 × 30 were due before it)`,
        );
        while ((await server.webhooks.tick()) > 0);
        for (const receiver of busy) {
          assert.deepEqual(
            receiver.received.map((r) => r.headers['webhook-id']),
            ids,
            'each busy endpoint got every event once, in emission order',
          );
        }
      } finally {
        for (const receiver of [...busy, victim]) await receiver.close();
        await server.stop();
        await server.database.drop();
      }
    });

    it('keeps delivering to a victim within seconds while 16 slow endpoints and a tarpit of another workspace hold the slots', async (t) => {
      // Few slots, all of which the noisy workspace may take: only the lease budget and the
      // round-robin over workspaces let the victim in.
      const server = await startTestServer(await create(), {
        WEBHOOKS_ALLOW_INSECURE: '1',
        WEBHOOK_DISPATCH_INTERVAL_MS: '200',
        WEBHOOK_TIMEOUT_MS: '1500',
        WEBHOOK_SLOTS: '4',
        WEBHOOK_SLOTS_PER_WORKSPACE: '4',
        WEBHOOK_LEASE_BUDGET_MS: '1000',
      });
      const tarpit = await startReceiver(() => {}); // never answers: each attempt times out
      const busy = await Promise.all(Array.from({ length: 16 }, () => startReceiver(slow(300))));
      const arrivedAt = new Map<string, number>();
      const victim = await startReceiver((received, _n, res) => {
        arrivedAt.set(String(received.headers['webhook-id']), performance.now());
        res.end();
      });
      try {
        const noisy = await tenant(server, [tarpit, ...busy]);
        const quiet = await tenant(server, [victim]);
        const ids = await backlog(server, noisy.ws, 20); // 6 s of answers queued for each busy endpoint
        await new Promise((r) => setTimeout(r, 300)); // the noisy endpoints take the slots
        const emittedAt = new Map<string, number>();
        for (let i = 0; i < 6; i++) {
          const started = performance.now();
          const emitted = await server.post('/v1/emit_event', sampleEvent('mbx_a', i), quiet.writer);
          assert.equal(emitted.status, 201, emitted.text);
          emittedAt.set(emitted.json.event.id, started);
          await new Promise((r) => setTimeout(r, 250));
        }
        await waitFor(() => arrivedAt.size >= emittedAt.size, 10_000, "the victim's deliveries");
        const waits = [...emittedAt].map(([id, at]) => Math.round(arrivedAt.get(id)! - at));
        t.diagnostic(`victim waits: ${waits.join(', ')} ms`);
        assert.ok(Math.max(...waits) <= 3000, `every victim delivery within 3 s (waits: ${waits.join(', ')} ms)`);
        assert.equal(victim.received.length, 6, 'each once');
        // Meanwhile the noisy endpoints were served too, each in emission order.
        const served = busy.filter((r) => r.received.length > 0);
        assert.ok(served.length >= 4, `several busy endpoints were served (${served.length})`);
        for (const receiver of served) {
          const got = receiver.received.map((r) => r.headers['webhook-id']);
          assert.deepEqual(got, ids.slice(0, got.length), 'a prefix of the emission order');
        }
      } finally {
        for (const receiver of [tarpit, ...busy, victim]) await receiver.close();
        await server.stop();
        await server.database.drop();
      }
    });
  });
}
