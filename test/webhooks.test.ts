import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { publish } from '../src/library.ts';
import { safeLookup, UNREACHABLE_TARGET } from '../src/net/target-policy.ts';
import { nextDelayMs, RETRY_DELAYS_SECONDS } from '../src/webhooks/retry-schedule.ts';
import { WebhookSender } from '../src/webhooks/send.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { databaseKinds, sqliteDatabase } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor } from './support/webhook-receiver.ts';

const INSECURE = { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '40', WEBHOOK_TIMEOUT_MS: '1000' };

/** The feed's raw text split into each event's exact bytes (the envelopes are stored text, spliced). */
async function feedEnvelopes(server: TestServer, key: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let after: string | undefined;
  for (;;) {
    const page = await server.post('/v1/event_feed', after ? { after, limit: 500 } : { limit: 500 }, key);
    for (const event of page.json.events) {
      const text = JSON.stringify(event);
      assert.ok(page.text.includes(text), 'envelope bytes are served as stored');
      out.set(event.id, text);
    }
    if (page.json.events.length < 500) return out;
    after = page.json.next_cursor;
  }
}

describe('retry schedule', () => {
  it('spans about three days, with jitter, and honours Retry-After', () => {
    const total = RETRY_DELAYS_SECONDS.reduce((a, b) => a + b, 0) / 86400;
    assert.ok(total > 2.9 && total < 3.3, `${total} days`);
    assert.equal(
      nextDelayMs(1, undefined, 0, () => 0),
      4000,
    );
    assert.equal(
      nextDelayMs(1, undefined, 0, () => 1),
      6000,
    );
    assert.equal(
      nextDelayMs(1, '7', 0, () => 0),
      7000,
      'Retry-After above the schedule wins',
    );
    assert.equal(
      nextDelayMs(1, new Date(60_000).toUTCString(), 0, () => 0),
      60_000,
    );
    assert.equal(
      nextDelayMs(3, '7', 0, () => 0),
      96_000,
      'Retry-After below the schedule does not shorten it',
    );
    // An endpoint answering `Retry-After: 0` every time is still retried for about three days, not 13 s.
    let spent = 0;
    for (let attempt = 1; ; attempt++) {
      const delay = nextDelayMs(attempt, '0', spent, () => 0);
      if (delay === undefined) break;
      spent += delay;
    }
    assert.ok(spent > 2.4 * 86400_000, `retried for ${(spent / 86400_000).toFixed(2)} days`);
    assert.equal(nextDelayMs(RETRY_DELAYS_SECONDS.length + 1, undefined, 0), undefined, 'then no attempt is left');
  });
});

describe('outbound safety', () => {
  it('checks the addresses a name resolves to when connecting, not only the URL text', async () => {
    // A name that is neither an IP literal nor "localhost": only the connect-time lookup can refuse it.
    const dns = (await import('node:dns')).default;
    const { syncBuiltinESMExports } = await import('node:module');
    const { createServer } = await import('node:net');
    const real = dns.lookup;
    const targets: Record<string, string> = {
      'loopback.rebind.test': '127.0.0.1',
      'private.rebind.test': '10.0.0.7',
      'metadata.rebind.test': '169.254.169.254',
      'mapped.rebind.test': '::ffff:127.0.0.1',
    };
    (dns as any).lookup = (hostname: string, options: any, callback: any) => {
      const address = targets[hostname];
      if (!address) return real(hostname, options, callback);
      const family = address.includes(':') ? 6 : 4;
      return options?.all ? callback(null, [{ address, family }]) : callback(null, address, family);
    };
    syncBuiltinESMExports();
    let connections = 0;
    const tcp = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    const port = (tcp.address() as { port: number }).port;
    const sender = new WebhookSender({ allowInsecure: false }, 1000);
    try {
      for (const host of Object.keys(targets)) {
        const result = await sender.send({ url: `https://${host}:${port}/hook`, secrets: ['whsec_AAAA'], eventId: 'evt_x', body: '{}' }, 1);
        assert.equal(result.status, null, host);
        assert.equal(result.error, UNREACHABLE_TARGET, host);
      }
      assert.equal(connections, 0, 'no connection was even opened to the loopback listener');
    } finally {
      (dns as any).lookup = real;
      syncBuiltinESMExports();
      await sender.close();
      await new Promise((r) => tcp.close(r));
    }
  });

  it('refuses names resolving to loopback at connect time, and literal private addresses', async () => {
    const lookup = safeLookup({ allowInsecure: false });
    const error = await new Promise<Error | null>((resolve) => lookup('localhost', {}, (err) => resolve(err)));
    assert.equal(error?.message, UNREACHABLE_TARGET);
    const receiver = await startReceiver();
    const sender = new WebhookSender({ allowInsecure: false }, 1000);
    for (const url of [
      receiver.url.replace('http:', 'https:'),
      receiver.url.replace('http://127.0.0.1', 'https://localhost'),
      'https://[::1]/x',
      'https://10.1.2.3/x',
      'https://169.254.169.254/latest/meta-data',
    ]) {
      const result = await sender.send({ url, secrets: ['whsec_AAAA'], eventId: 'evt_x', body: '{}' }, 1);
      assert.equal(result.status, null, url);
      assert.match(String(result.error), /public address|loopback/, url);
    }
    assert.equal(receiver.received.length, 0, 'nothing reached the loopback receiver');
    await sender.close();
    await receiver.close();
  });
});

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`webhooks on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(await create(), INSECURE);
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    it('set_webhook needs admin on an unrestricted key, and shows the secret only on creation and rotation', async () => {
      const ws = await server.workspace();
      const admin = (await server.key(ws, ['admin'])).key;
      const reader = (await server.key(ws, ['read', 'write'])).key;
      const restrictedAdmin = (await server.key(ws, ['admin'], ['mbx_a'])).key;
      const url = 'http://127.0.0.1:9/hook';
      assert.equal((await server.post('/v1/set_webhook', { url }, reader)).json.error.code, 'forbidden');
      assert.equal((await server.post('/v1/set_webhook', { url }, restrictedAdmin)).json.error.code, 'forbidden');

      const created = await server.post('/v1/set_webhook', { url, event_types: ['mail.bounced', 'mail.*'] }, admin);
      assert.equal(created.status, 200, created.text);
      assert.equal(contractErrors('SetWebhookResponse', created.json), null);
      assert.equal(created.json.outcome, 'created');
      assert.match(created.json.endpoint.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      assert.equal(created.json.endpoint.secret_hint, created.json.endpoint.secret.slice(-4));

      const updated = await server.post('/v1/set_webhook', { url, enabled: false }, admin);
      assert.equal(updated.json.outcome, 'updated');
      assert.equal(updated.json.endpoint.secret, undefined, 'no secret on a plain update');
      assert.equal(updated.json.endpoint.enabled, false);
      assert.deepEqual(updated.json.endpoint.event_types, ['mail.bounced', 'mail.*'], 'omitted fields unchanged');

      const rotated = await server.post('/v1/set_webhook', { url, rotate_secret: true }, admin);
      assert.notEqual(rotated.json.endpoint.secret, created.json.endpoint.secret);

      const listed = await server.post('/v1/list_webhooks', {}, admin);
      assert.equal(contractErrors('ListWebhooksResponse', listed.json), null);
      assert.equal(JSON.stringify(listed.json).includes('whsec_'), false, 'list_webhooks never shows a secret');

      const removed = await server.post('/v1/set_webhook', { url, remove: true }, admin);
      assert.equal(removed.json.outcome, 'removed');
      assert.deepEqual((await server.post('/v1/list_webhooks', {}, admin)).json, { webhooks: [] });
      assert.equal((await server.post('/v1/set_webhook', { url, remove: true }, admin)).status, 400);
      assert.equal((await server.post('/v1/set_webhook', { url: 'ftp://x/y' }, admin)).status, 400);
      assert.equal((await server.post('/v1/set_webhook', { url, colour: 'blue' }, admin)).status, 400);
    });

    it('delivers each emitted event, in order, with the feed bytes and valid Standard Webhooks signatures', async () => {
      const receiver = await startReceiver();
      try {
        const ws = await server.workspace();
        const admin = (await server.key(ws, ['admin'])).key;
        const writer = (await server.key(ws, ['read', 'write'])).key;
        const { secret } = (await server.post('/v1/set_webhook', { url: receiver.url }, admin)).json.endpoint;
        const emitted: string[] = [];
        for (let i = 0; i < 12; i++)
          emitted.push((await server.post('/v1/emit_event', sampleEvent(i % 3 ? 'mbx_a' : undefined, i), writer)).json.event.id);
        // A rolled-back publish leaves neither events nor deliveries.
        await server.db
          .transaction(async (trx) => {
            await publish(trx, ws, [sampleEvent('mbx_a', 99)]);
            await trx.rollback();
          })
          .catch(() => {});
        await waitFor(() => receiver.received.length >= 12, 10_000, 'deliveries');
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(receiver.received.length, 12, 'once each, and nothing for the rolled-back event');

        const feed = await feedEnvelopes(server, writer);
        const verifier = new Webhook(secret);
        assert.deepEqual(
          receiver.received.map((r) => r.headers['webhook-id']),
          emitted,
          'in emission order',
        );
        for (const delivery of receiver.received) {
          const verified = verifier.verify(delivery.body, delivery.headers as Record<string, string>) as { id: string };
          assert.equal(verified.id, delivery.headers['webhook-id']);
          assert.equal(delivery.body, feed.get(verified.id), 'the same bytes as the feed');
          assert.equal(delivery.headers['content-type'], 'application/json');
        }
        const status = (await server.post('/v1/list_webhooks', {}, admin)).json.webhooks[0];
        assert.equal(status.pending_deliveries, 0);
        assert.equal(status.recent_attempts.length, 12);
        assert.ok(status.recent_attempts.every((a: any) => a.outcome === 'delivered' && a.status === 200 && a.error === null));
      } finally {
        await receiver.close();
      }
    });

    it('filters by type and prefix, and redelivers the events after a cursor', async () => {
      const receiver = await startReceiver();
      try {
        const ws = await server.workspace();
        const admin = (await server.key(ws, ['admin'])).key;
        const writer = (await server.key(ws, ['read', 'write'])).key;
        await server.post('/v1/set_webhook', { url: receiver.url, event_types: ['mail.received'] }, admin);
        const cursor = (await server.post('/v1/event_feed', {}, writer)).json.next_cursor;
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), writer);
        await server.post(
          '/v1/emit_event',
          {
            ...sampleEvent('mbx_a', 2),
            type: 'mail.complained',
            data: { internet_message_id: '<x@y.fr>', recipient: 'a@b.fr', feedback_type: 'abuse' },
          },
          writer,
        );
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 3), writer);
        await waitFor(() => receiver.received.length >= 2, 10_000, 'deliveries');
        await new Promise((r) => setTimeout(r, 200));
        assert.equal(receiver.received.length, 2, 'mail.complained is filtered out');

        const again = await server.post('/v1/redeliver_webhook', { url: receiver.url, after: cursor }, admin);
        assert.equal(again.status, 200, again.text);
        assert.equal(again.json.scheduled, 2);
        await waitFor(() => receiver.received.length >= 4, 10_000, 'redeliveries');
        assert.deepEqual(
          receiver.received.slice(2).map((r) => r.body),
          receiver.received.slice(0, 2).map((r) => r.body),
        );
        const none = await server.post('/v1/redeliver_webhook', { url: receiver.url, after: again.json.next_cursor }, admin);
        assert.deepEqual(none.json, { scheduled: 0, next_cursor: again.json.next_cursor });
      } finally {
        await receiver.close();
      }
    });
  });
}

describe('failures, retries and recovery (driven by a fake clock)', () => {
  let server: TestServer;
  const clock = new FakeClock(Date.now());
  before(async () => {
    // A long interval: the test runs each dispatch pass itself.
    server = await startTestServer(await sqliteDatabase(), { ...INSECURE, WEBHOOK_DISPATCH_INTERVAL_MS: '3600000' }, { clock });
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  async function endpointWith(respond: Parameters<typeof startReceiver>[0]) {
    const receiver = await startReceiver(respond);
    const ws = await server.workspace();
    const admin = (await server.key(ws, ['admin'])).key;
    const writer = (await server.key(ws, ['read', 'write'])).key;
    await server.post('/v1/set_webhook', { url: receiver.url }, admin);
    return { receiver, admin, writer };
  }
  const status = async (admin: string) => (await server.post('/v1/list_webhooks', {}, admin)).json.webhooks[0];

  it('retries a failing endpoint with backoff until it recovers: every event at least once', async () => {
    let healthy = false;
    const { receiver, admin, writer } = await endpointWith((_r, _n, res) => {
      res.statusCode = healthy ? 200 : 500;
      res.end();
    });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await server.post('/v1/emit_event', sampleEvent('mbx_a', i), writer)).json.event.id);
    assert.equal(await server.webhooks.tick(), 1, 'the first failure stops the pass for this endpoint');
    let s = await status(admin);
    assert.equal(s.recent_attempts[0].outcome, 'retry');
    assert.equal(s.recent_attempts[0].status, 500);
    assert.equal(s.recent_attempts[0].error, 'answered 500');
    const dueIn = Date.parse(s.recent_attempts[0].next_retry_at) - clock.now().getTime();
    assert.ok(dueIn >= 4000 && dueIn <= 6000, `first retry after about 5 s (${dueIn} ms)`);

    await server.webhooks.tick(); // the other three are due and fail too
    for (let round = 0; round < 3; round++) {
      clock.advanceDays(1 / 24);
      await server.webhooks.tick();
    }
    healthy = true;
    clock.advanceDays(1 / 24);
    for (let i = 0; i < 3; i++) await server.webhooks.tick();
    s = await status(admin);
    assert.equal(s.pending_deliveries, 0);
    const delivered = new Set(receiver.received.filter((_r, i) => i >= receiver.received.length - 4).map((r) => r.headers['webhook-id']));
    assert.deepEqual([...delivered].sort(), [...ids].sort(), 'each event id delivered after recovery');
    await receiver.close();
  });

  it('honours Retry-After on 429, disables the endpoint on 410, and does not follow redirects', async () => {
    const limited = await endpointWith((_r, _n, res) => {
      res.writeHead(429, { 'retry-after': '120' });
      res.end();
    });
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), limited.writer);
    await server.webhooks.tick();
    const retry = (await status(limited.admin)).recent_attempts[0];
    assert.equal(Date.parse(retry.next_retry_at) - Date.parse(retry.started_at) >= 119_000, true, 'Retry-After honoured');
    await limited.receiver.close();

    const gone = await endpointWith((_r, _n, res) => {
      res.statusCode = 410;
      res.end();
    });
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 2), gone.writer);
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 3), gone.writer);
    await server.webhooks.tick();
    const g = await status(gone.admin);
    assert.equal(g.endpoint.enabled, false);
    assert.match(g.endpoint.disabled_reason, /410/);
    assert.equal(g.recent_attempts[0].outcome, 'disabled');
    clock.advanceDays(1);
    await server.webhooks.tick();
    assert.equal(gone.receiver.received.length, 1, 'a disabled endpoint gets nothing more');
    await gone.receiver.close();

    let targetHit = false;
    const target = await startReceiver((_r, _n, res) => {
      targetHit = true;
      res.end();
    });
    const redirecting = await endpointWith((_r, _n, res) => {
      res.writeHead(307, { location: target.url });
      res.end();
    });
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 4), redirecting.writer);
    await server.webhooks.tick();
    const r = (await status(redirecting.admin)).recent_attempts[0];
    assert.equal(r.status, 307);
    assert.match(r.error, /redirects are not followed/);
    assert.equal(targetHit, false);
    await target.close();
    await redirecting.receiver.close();
  });

  it('times out a silent endpoint and survives a huge answer', async () => {
    const silent = await endpointWith(() => {});
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), silent.writer);
    await server.webhooks.tick();
    const t = (await status(silent.admin)).recent_attempts[0];
    assert.equal(t.error, 'timed out');
    assert.equal(t.outcome, 'retry');
    await silent.receiver.close();

    const chatty = await endpointWith((_r, _n, res) => {
      res.writeHead(200);
      res.end(Buffer.alloc(5 * 1024 * 1024, 'x'));
    });
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 2), chatty.writer);
    await server.webhooks.tick();
    assert.equal((await status(chatty.admin)).recent_attempts[0].outcome, 'delivered');
    await chatty.receiver.close();

    // An answer that never ends: only the size cap lets the attempt finish (as delivered) before the timeout.
    let streaming: NodeJS.Timeout | undefined;
    const endless = await endpointWith((_r, _n, res) => {
      res.writeHead(200);
      streaming = setInterval(() => res.write(Buffer.alloc(16 * 1024, 'x')), 5);
      res.on('close', () => clearInterval(streaming));
    });
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 3), endless.writer);
    await server.webhooks.tick();
    clearInterval(streaming);
    const e = (await status(endless.admin)).recent_attempts[0];
    assert.equal(e.outcome, 'delivered', `the body is read up to the cap, then dropped: ${JSON.stringify(e)}`);
    assert.ok(e.latency_ms < 1000, `well before the 1 s timeout (${e.latency_ms} ms)`);
    await endless.receiver.close();
  });

  it('sends a delivery again when the instance that held it died mid-delivery', async () => {
    const { receiver, admin, writer } = await endpointWith((_r, _n, res) => void res.end());
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), writer);
    // Another instance leased the endpoint, then crashed before recording anything.
    await server.db('webhook_endpoints').update({ lease_owner: 'disp_dead', lease_until: clock.now().getTime() + 60_000 });
    await server.webhooks.tick();
    assert.equal(receiver.received.length, 0, 'the lease keeps others away while it lasts');
    clock.advanceDays(2 / 1440);
    await server.webhooks.tick();
    assert.equal(receiver.received.length, 1, 'then the delivery is retried: never lost');
    assert.equal((await status(admin)).pending_deliveries, 0);
    await receiver.close();
  });
});

const postgres = (await databaseKinds())[1]!;

describe('several instances on one Postgres share deliveries', { skip: postgres.skip && 'Postgres unreachable (see notice above)' }, () => {
  it('sends every event exactly once, in order, to a healthy endpoint', async () => {
    const database = await postgres.create();
    const one = await startTestServer(database, { ...INSECURE, WEBHOOK_DISPATCH_INTERVAL_MS: '20' });
    const two = await startTestServer(database, { ...INSECURE, WEBHOOK_DISPATCH_INTERVAL_MS: '20' });
    const receiver = await startReceiver((_r, _n, res) => setTimeout(() => res.end(), 2));
    // Several endpoints too, so both instances have work to take at once. Closed whatever happens:
    // a receiver left listening keeps the test process alive after a failure.
    const others = await Promise.all([1, 2, 3].map(() => startReceiver()));
    try {
      const ws = await one.workspace();
      const admin = (await one.key(ws, ['admin'])).key;
      const writer = (await one.key(ws, ['read', 'write'])).key;
      await one.post('/v1/set_webhook', { url: receiver.url }, admin);
      for (const other of others) await one.post('/v1/set_webhook', { url: other.url }, admin);
      const ids: string[] = [];
      for (let i = 0; i < 60; i++)
        ids.push((await (i % 2 ? one : two).post('/v1/emit_event', sampleEvent('mbx_a', i), writer)).json.event.id);
      await waitFor(() => receiver.received.length >= 60 && others.every((o) => o.received.length >= 60), 20_000, 'deliveries');
      await new Promise((r) => setTimeout(r, 300));
      for (const target of [receiver, ...others]) {
        assert.deepEqual(
          target.received.map((r) => r.headers['webhook-id']),
          ids,
          'each exactly once, in emission order',
        );
      }
      const attempts = await one.db('webhook_attempts').count({ n: '*' }).first();
      assert.equal(Number(attempts?.n), 240, 'one attempt per delivery, across both instances');
    } finally {
      for (const other of others) await other.close();
      await receiver.close();
      await one.stop();
      await two.stop();
      await database.drop();
    }
  });
});
