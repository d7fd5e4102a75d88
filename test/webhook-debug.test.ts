/**
 * Webhooks an integrator can debug: test_webhook (a signed test delivery, now, outside the outbox)
 * and rotate_secret (two signatures during the grace, verified with the `standardwebhooks` library
 * against each secret; then the new one only), on SQLite and Postgres.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor, type Received } from './support/webhook-receiver.ts';

const INSECURE = { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '40', WEBHOOK_TIMEOUT_MS: '1000' };

const signaturesOf = (received: Received) => String(received.headers['webhook-signature']).split(' ');
/** Whether the `standardwebhooks` library accepts this request with this secret. */
const verifies = (secret: string, received: Received) => {
  try {
    new Webhook(secret).verify(received.body, received.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`test_webhook and rotate_secret on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(await create(), INSECURE);
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    async function workspace() {
      const ws = await server.workspace();
      return { ws, admin: (await server.key(ws, ['admin'])).key, writer: (await server.key(ws, ['read', 'write'])).key };
    }

    it('test_webhook sends one signed test delivery now and answers with the status, latency and first bytes', async () => {
      // 1,023 ASCII bytes then "é" (2 bytes) across the 1 KiB limit, then more: the cut character is left out.
      const answer = `${'a'.repeat(1023)}é${'b'.repeat(500)}`;
      const receiver = await startReceiver((_r, _n, res) => {
        res.writeHead(201, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(answer);
      });
      try {
        const { ws, admin, writer } = await workspace();
        // A filter that no test type matches, and a disabled endpoint: neither stops a test.
        const { secret, id } = (
          await server.post('/v1/set_webhook', { url: receiver.url, event_types: ['mail.bounced'], enabled: false }, admin)
        ).json.endpoint;

        const tested = await server.post('/v1/test_webhook', { url: receiver.url }, admin);
        assert.equal(tested.status, 200, tested.text);
        assert.equal(
          contractErrors('TestWebhookResponse', tested.json),
          null,
          JSON.stringify(contractErrors('TestWebhookResponse', tested.json)),
        );
        const result = tested.json;
        assert.equal(result.endpoint_id, id);
        assert.match(result.webhook_id, /^whtest_[0-9A-Z]{26}$/);
        assert.equal(result.event_type, 'webhook.test');
        assert.deepEqual([result.status, result.delivered, result.error, result.signatures], [201, true, null, 1]);
        assert.ok(Number.isInteger(result.latency_ms) && result.latency_ms >= 0);
        assert.equal(result.response_body, 'a'.repeat(1023), 'the first 1,024 bytes, without the character cut in two');
        assert.equal(result.response_body_truncated, true);

        assert.equal(receiver.received.length, 1);
        const [request] = receiver.received;
        assert.equal(request!.headers['webhook-id'], result.webhook_id);
        assert.equal(request!.headers['user-agent'], 'event-feed-webhooks/1');
        assert.equal(request!.headers['content-type'], 'application/json');
        const body = new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>) as Record<string, any>;
        assert.equal(contractErrors('WebhookTestDelivery', body), null, JSON.stringify(contractErrors('WebhookTestDelivery', body)));
        assert.deepEqual([body.id, body.type, body.account, body.data.endpoint_id], [result.webhook_id, 'webhook.test', ws, id]);
        assert.equal(body.occurred_at, result.sent_at);

        // Never in the feed, never in the outbox, never among the attempts.
        assert.deepEqual((await server.post('/v1/event_feed', {}, writer)).json.events, []);
        assert.equal(Number((await server.db('webhook_deliveries').where({ endpoint_id: id }).count({ n: '*' }))[0]!.n), 0);
        const listed = (await server.post('/v1/list_webhooks', {}, admin)).json.webhooks[0];
        assert.deepEqual(listed.recent_attempts, []);
        assert.deepEqual(listed.health, { window: 100, attempts: 0, delivered: 0, success_rate: null });

        // One test per endpoint every 5 seconds.
        const again = await server.post('/v1/test_webhook', { url: receiver.url }, admin);
        assert.equal(again.status, 429, again.text);
        assert.equal(again.json.error.code, 'rate_limited');
        const retryAfter = Number(again.headers.get('retry-after'));
        assert.ok(retryAfter >= 1 && retryAfter <= 5, `Retry-After ${retryAfter}`);
        assert.equal(receiver.received.length, 1, 'the refused call sent nothing');

        // Removing the endpoint and setting it again does not start a new cooldown: it is the workspace's URL's.
        assert.equal((await server.post('/v1/set_webhook', { url: receiver.url, remove: true }, admin)).status, 200);
        assert.equal((await server.post('/v1/set_webhook', { url: receiver.url }, admin)).status, 200);
        const recreated = await server.post('/v1/test_webhook', { url: receiver.url }, admin);
        assert.equal(recreated.status, 429, recreated.text);
        assert.equal(receiver.received.length, 1, 'still one test delivery');
        // Another workspace testing the same URL has a cooldown of its own.
        const other = await workspace();
        await server.post('/v1/set_webhook', { url: receiver.url }, other.admin);
        assert.equal((await server.post('/v1/test_webhook', { url: receiver.url }, other.admin)).status, 200);
      } finally {
        await receiver.close();
      }
    });

    it('test_webhook reports a failure to reach the endpoint, and refuses what set_webhook refuses', async () => {
      const { ws, admin } = await workspace();
      const url = `http://127.0.0.1:${await closedPort()}/hook`;
      await server.post('/v1/set_webhook', { url }, admin);
      const refused = await server.post('/v1/test_webhook', { url }, admin);
      assert.equal(refused.status, 200, refused.text);
      assert.equal(contractErrors('TestWebhookResponse', refused.json), null);
      assert.deepEqual(
        [refused.json.status, refused.json.delivered, refused.json.error, refused.json.response_body],
        [null, false, 'connection refused', null],
      );

      const reader = (await server.key(ws, ['read', 'write'])).key;
      const restrictedAdmin = (await server.key(ws, ['admin'], ['mbx_a'])).key;
      assert.equal((await server.post('/v1/test_webhook', { url }, reader)).status, 403);
      assert.equal((await server.post('/v1/test_webhook', { url }, restrictedAdmin)).status, 403);
      const unknown = await server.post('/v1/test_webhook', { url: 'http://127.0.0.1:9/elsewhere' }, admin);
      assert.equal(unknown.status, 400);
      assert.match(unknown.json.error.message, /no webhook endpoint has this url/);
      // Another workspace's endpoint is unknown here.
      const other = await workspace();
      assert.equal((await server.post('/v1/test_webhook', { url }, other.admin)).status, 400);
    });

    it('during a rotation’s grace every delivery verifies with each secret; after it, with the new one only', async () => {
      const receiver = await startReceiver();
      try {
        const { admin, writer } = await workspace();
        const old = (await server.post('/v1/set_webhook', { url: receiver.url }, admin)).json.endpoint.secret as string;
        const rotated = await server.post('/v1/rotate_secret', { url: receiver.url, grace_seconds: 2 }, admin);
        assert.equal(rotated.status, 200, rotated.text);
        assert.equal(contractErrors('RotateSecretResponse', rotated.json), null);
        const endpoint = rotated.json.endpoint;
        const fresh = endpoint.secret as string;
        assert.match(fresh, /^whsec_/);
        assert.notEqual(fresh, old);
        assert.equal(endpoint.secret_hint, fresh.slice(-4));
        assert.equal(endpoint.previous_secret_hint, old.slice(-4));
        const graceEnds = Date.parse(endpoint.previous_secret_expires_at);
        assert.ok(Math.abs(graceEnds - (Date.parse(endpoint.updated_at) + 2000)) < 5, 'the grace ends 2 s after the rotation');

        await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), writer);
        await waitFor(() => receiver.received.length >= 1, 10_000, 'the delivery');
        const during = receiver.received[0]!;
        assert.equal(signaturesOf(during).length, 2, 'two signatures');
        assert.ok(verifies(fresh, during), 'verifies with the new secret');
        assert.ok(verifies(old, during), 'verifies with the old secret');
        assert.ok(
          verifies(fresh, { ...during, headers: { ...during.headers, 'webhook-signature': signaturesOf(during)[0] } }),
          'the new secret’s signature comes first',
        );

        const tested = await server.post('/v1/test_webhook', { url: receiver.url }, admin);
        assert.equal(tested.json.signatures, 2);
        const test = receiver.received[1]!;
        assert.ok(verifies(fresh, test) && verifies(old, test), 'a test delivery during the grace verifies with each secret');

        const listed = (await server.post('/v1/list_webhooks', {}, admin)).json;
        assert.equal(JSON.stringify(listed).includes('whsec_'), false, 'list_webhooks shows no secret');
        assert.equal(listed.webhooks[0].endpoint.previous_secret_hint, old.slice(-4));

        await waitFor(() => Date.now() > graceEnds + 50, 5000, 'the end of the grace');
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 2), writer);
        await waitFor(() => receiver.received.length >= 3, 10_000, 'the delivery after the grace');
        const afterGrace = receiver.received[2]!;
        assert.equal(signaturesOf(afterGrace).length, 1);
        assert.ok(verifies(fresh, afterGrace), 'verifies with the new secret');
        assert.ok(!verifies(old, afterGrace), 'no longer with the old one');
        const endpointAfter = (await server.post('/v1/list_webhooks', {}, admin)).json.webhooks[0].endpoint;
        assert.deepEqual([endpointAfter.previous_secret_hint, endpointAfter.previous_secret_expires_at], [null, null]);

        // No grace: the old secret stops at once (after a leak).
        const leaked = (await server.post('/v1/rotate_secret', { url: receiver.url, grace_seconds: 0 }, admin)).json.endpoint;
        assert.equal(leaked.previous_secret_hint, null);
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 3), writer);
        await waitFor(() => receiver.received.length >= 4, 10_000, 'the delivery after a rotation without grace');
        const noGrace = receiver.received[3]!;
        assert.equal(signaturesOf(noGrace).length, 1);
        assert.ok(verifies(leaked.secret, noGrace) && !verifies(fresh, noGrace));
      } finally {
        await receiver.close();
      }
    });

    it('rotate_secret checks its grace and its caller; set_webhook’s rotate_secret keeps the old secret for 24 h', async () => {
      const { ws, admin } = await workspace();
      const url = 'http://127.0.0.1:9/hook';
      const created = (await server.post('/v1/set_webhook', { url }, admin)).json.endpoint;
      const tooLong = await server.post('/v1/rotate_secret', { url, grace_seconds: 7 * 86400 + 1 }, admin);
      assert.equal(tooLong.status, 400);
      assert.match(tooLong.json.error.message, /grace_seconds/);
      assert.equal((await server.post('/v1/rotate_secret', { url, grace_seconds: -1 }, admin)).status, 400);
      assert.equal((await server.post('/v1/rotate_secret', { url: 'http://127.0.0.1:9/other' }, admin)).status, 400);
      assert.equal((await server.post('/v1/rotate_secret', { url }, (await server.key(ws, ['read'])).key)).status, 403);

      const byDefault = (await server.post('/v1/rotate_secret', { url }, admin)).json.endpoint;
      assert.equal(Date.parse(byDefault.previous_secret_expires_at) - Date.parse(byDefault.updated_at), 24 * 3600_000, 'a day by default');
      assert.equal(byDefault.previous_secret_hint, created.secret_hint);

      const viaSet = await server.post('/v1/set_webhook', { url, rotate_secret: true }, admin);
      assert.equal(contractErrors('SetWebhookResponse', viaSet.json), null);
      const endpoint = viaSet.json.endpoint;
      assert.equal(endpoint.previous_secret_hint, byDefault.secret.slice(-4), 'the secret it replaced');
      assert.equal(Date.parse(endpoint.previous_secret_expires_at) - Date.parse(endpoint.updated_at), 24 * 3600_000);
    });
  });

  describe(`a rotation's default grace, by the clock, on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    const clock = new FakeClock(Date.now());
    let server: TestServer;
    before(async () => {
      server = await startTestServer(await create(), { ...INSECURE, WEBHOOK_DISPATCH_INTERVAL_MS: '3600000' }, { clock });
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    it('signs with both secrets for 24 hours, then with the new one only', async () => {
      const receiver = await startReceiver();
      try {
        const ws = await server.workspace();
        const admin = (await server.key(ws, ['admin'])).key;
        const writer = (await server.key(ws, ['read', 'write'])).key;
        const old = (await server.post('/v1/set_webhook', { url: receiver.url }, admin)).json.endpoint.secret as string;
        const fresh = (await server.post('/v1/rotate_secret', { url: receiver.url }, admin)).json.endpoint.secret as string;
        // The library's own signing at the request's timestamp: its verify() checks that time against the real clock.
        const signedWith = (secret: string, received: Received) =>
          new Webhook(secret).sign(
            String(received.headers['webhook-id']),
            new Date(Number(received.headers['webhook-timestamp']) * 1000),
            received.body,
          );

        clock.advanceDays(23 / 24);
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), writer);
        await server.webhooks.tick();
        const within = receiver.received.at(-1)!;
        assert.deepEqual(signaturesOf(within), [signedWith(fresh, within), signedWith(old, within)], 'new first, then old, 23 h after');

        clock.advanceDays(2 / 24);
        await server.post('/v1/emit_event', sampleEvent('mbx_a', 2), writer);
        await server.webhooks.tick();
        const past = receiver.received.at(-1)!;
        assert.deepEqual(signaturesOf(past), [signedWith(fresh, past)], 'the new one only, 25 h after');
        assert.equal(receiver.received.length, 2);
      } finally {
        await receiver.close();
      }
    });
  });
}
