/**
 * What list_webhooks and the logs say of a failing endpoint: its success rate over its last
 * attempts, why and when the service disabled it (410 Gone, or retries exhausted with no success
 * meanwhile), and one `warn` line per failed attempt plus one when it is disabled, never carrying
 * a secret, the payload or the URL. Driven by a fake clock, on SQLite and Postgres.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver } from './support/webhook-receiver.ts';

const INSECURE = { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '3600000', WEBHOOK_TIMEOUT_MS: '1000' };
const WARN = 40;

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`webhook health and logs on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    const clock = new FakeClock(Date.now());
    const lines: LogLine[] = [];
    const raw: string[] = [];
    let server: TestServer;
    before(async () => {
      // The service's logger at the default level, writing into this array instead of stdout.
      const log = pino({ level: 'info' }, { write: (line: string) => void (raw.push(line), lines.push(JSON.parse(line))) });
      server = await startTestServer(await create(), INSECURE, { clock, log });
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    async function endpointAt(url: string) {
      const ws = await server.workspace();
      const admin = (await server.key(ws, ['admin'])).key;
      const writer = (await server.key(ws, ['read', 'write'])).key;
      const endpoint = (await server.post('/v1/set_webhook', { url }, admin)).json.endpoint;
      const status = async () => (await server.post('/v1/list_webhooks', {}, admin)).json.webhooks[0];
      const logged = () => lines.filter((line) => line.endpoint_id === endpoint.id);
      return { ws, admin, writer, endpoint, status, logged };
    }

    /** Runs dispatch passes, moving the clock past every retry delay, until nothing is pending. */
    async function untilSettled(status: () => Promise<{ pending_deliveries: number }>) {
      for (let round = 0; round < 20 && (await status()).pending_deliveries > 0; round++) {
        await server.webhooks.tick();
        clock.advanceDays(1.25);
      }
    }

    it('logs each failed attempt at warn, and the endpoint disabled by 410 once; list_webhooks shows why and when', async () => {
      const receiver = await startReceiver((_r, n, res) => {
        res.statusCode = n === 1 ? 500 : 410;
        res.end();
      });
      try {
        const e = await endpointAt(receiver.url);
        const emitted = (await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), e.writer)).json.event.id;
        await server.webhooks.tick();
        const [first] = e.logged();
        assert.equal(first?.level, WARN, 'seen at the default level');
        assert.equal(first.msg, 'webhook attempt failed; retry scheduled');
        assert.deepEqual(
          { workspace: first.workspace_id, event: first.event_id, attempt: first.attempt, status: first.status, error: first.error },
          { workspace: e.ws, event: emitted, attempt: 1, status: 500, error: 'answered 500' },
        );
        const retryAt = Date.parse(String(first.next_retry_at));
        assert.ok(
          retryAt - clock.now().getTime() >= 4000 && retryAt - clock.now().getTime() <= 6100,
          `next retry in about 5 s: ${first.next_retry_at}`,
        );

        // Past the retry's due time and the pause after a failure (one dispatch interval: 1 h here).
        clock.advanceDays(2 / 24);
        await server.webhooks.tick();
        const disabledAt = clock.now().toISOString();
        const [, second, disabled, ...more] = e.logged();
        assert.deepEqual(
          [second?.msg, second?.status, second?.attempt, second?.next_retry_at],
          ['webhook attempt failed; no retry', 410, 2, null],
        );
        assert.deepEqual(
          [disabled?.level, disabled?.msg, disabled?.reason, disabled?.workspace_id],
          [WARN, 'webhook endpoint disabled', 'the endpoint answered 410 Gone', e.ws],
        );
        assert.deepEqual(more, [], 'logged once');

        const s = await e.status();
        assert.equal(s.endpoint.enabled, false);
        assert.equal(s.endpoint.disabled_reason, 'the endpoint answered 410 Gone');
        assert.equal(s.endpoint.disabled_at, disabledAt);
        assert.deepEqual(s.health, { window: 100, attempts: 2, delivered: 0, success_rate: 0 });

        // Enabled again by an admin: the reason and the time go.
        const enabled = (await server.post('/v1/set_webhook', { url: receiver.url, enabled: true }, e.admin)).json.endpoint;
        assert.deepEqual([enabled.enabled, enabled.disabled_reason, enabled.disabled_at], [true, null, null]);
      } finally {
        await receiver.close();
      }
    });

    it('names the system’s error for a host that does not resolve, and never logs a secret, a payload or a URL', async () => {
      const url = 'http://no-such-host.invalid/hook';
      const e = await endpointAt(url);
      await server.post('/v1/emit_event', sampleEvent('mbx_a', 7), e.writer);
      await server.webhooks.tick();
      const [line] = e.logged();
      assert.equal(line?.level, WARN);
      assert.equal(line.status, null);
      assert.match(String(line.error_code), /^(ENOTFOUND|EAI_AGAIN)$/, JSON.stringify(line));
      assert.equal(line.attempt, 1);

      const all = raw.join('');
      assert.equal(all.includes('whsec_'), false, 'no secret');
      assert.equal(all.includes(e.endpoint.secret.slice(6, 20)), false, 'no part of a secret');
      assert.equal(all.includes('client7@example.fr') || all.includes('Commande'), false, 'no payload');
      assert.equal(all.includes('no-such-host'), false, 'no URL');
    });

    it('disables an endpoint whose retries ran out with no success meanwhile (logged once), not one that delivers other events', async () => {
      const dead = await startReceiver((_r, _n, res) => {
        res.statusCode = 500;
        res.end();
      });
      // Refuses one event forever, takes the others.
      const picky = await startReceiver((received, _n, res) => {
        res.statusCode = received.body.includes('Commande 666') ? 400 : 200;
        res.end();
      });
      try {
        const d = await endpointAt(dead.url);
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), d.writer);
        await untilSettled(d.status);
        const failures = d.logged().filter((line) => line.msg.startsWith('webhook attempt failed'));
        assert.equal(failures.length, 13, '13 attempts, each logged');
        assert.deepEqual(
          failures.map((line) => line.attempt),
          Array.from({ length: 13 }, (_, i) => i + 1),
        );
        assert.ok(failures.slice(0, 12).every((line) => line.msg.endsWith('retry scheduled') && typeof line.next_retry_at === 'string'));
        assert.deepEqual([failures[12]!.msg, failures[12]!.next_retry_at], ['webhook attempt failed; no retry', null]);
        const disabled = d.logged().filter((line) => line.msg === 'webhook endpoint disabled');
        assert.equal(disabled.length, 1, 'logged once');
        assert.match(String(disabled[0]!.reason), /^retries exhausted/);
        const s = await d.status();
        assert.equal(s.endpoint.enabled, false);
        assert.match(s.endpoint.disabled_reason, /^retries exhausted/);
        assert.equal(s.endpoint.disabled_at, s.recent_attempts[0].started_at, 'when the last attempt failed');
        assert.deepEqual(s.health, { window: 100, attempts: 13, delivered: 0, success_rate: 0 });

        const p = await endpointAt(picky.url);
        // Both queued now; the other event is delivered after the refused one was queued.
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 2), p.writer);
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 666), p.writer);
        await untilSettled(p.status);
        const ps = await p.status();
        assert.equal(ps.endpoint.enabled, true, 'one refused event does not disable an endpoint that delivers');
        assert.equal(ps.endpoint.disabled_reason, null);
        assert.deepEqual(ps.health, { window: 100, attempts: 14, delivered: 1, success_rate: 0.071 });
        assert.equal(p.logged().filter((line) => line.msg === 'webhook endpoint disabled').length, 0);
      } finally {
        await dead.close();
        await picky.close();
      }
    });

    it('takes the success rate over the last 100 attempts only', async () => {
      const e = await endpointAt('http://127.0.0.1:9/hook');
      const endpointId = e.endpoint.id;
      const rows = Array.from({ length: 150 }, (_, i) => ({
        endpoint_id: endpointId,
        event_id: `evt_${i}`,
        attempt: 1,
        started_at: i,
        status: i < 100 ? 500 : 200,
        latency_ms: 1,
        error: null,
        outcome: i < 100 ? 'retry' : 'delivered',
        next_retry_at: null,
      }));
      await server.db('webhook_attempts').insert(rows);
      // The newest 100: 50 failures, then the 50 deliveries.
      assert.deepEqual((await e.status()).health, { window: 100, attempts: 100, delivered: 50, success_rate: 0.5 });
    });
  });
}
