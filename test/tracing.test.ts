/**
 * OpenTelemetry traces (issue 43): the real service started with the standard OTEL_* variables,
 * exporting to a real OTLP/HTTP receiver started here, on SQLite and on Postgres.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { databaseKinds, type TestDatabase } from './support/databases.ts';
import { CLIENT, SERVER, startOtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.ts';
import { provision, startProcessServer, type ProcessServer } from './support/process-server.ts';
import { rawToolCall } from './support/mcp.ts';
import { startReceiver, waitFor } from './support/webhook-receiver.ts';

const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const EMAIL = 'claire.dubois@exemple.fr';
const TYPES = JSON.parse(readFileSync(new URL('../schemas/event-types.json', import.meta.url), 'utf8')).types as Array<{
  type: string;
  data: string;
}>;
const DELIVERED = TYPES.find((t) => t.type === 'mail.delivered')!;
const DELIVERED_DATA = JSON.parse(readFileSync(new URL(`../schemas/${DELIVERED.data}`, import.meta.url), 'utf8')).examples[0];

const post = (url: string, path: string, body: unknown, key: string, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

for (const { kind, create, skip } of await databaseKinds()) {
  for (const protocol of kind === 'sqlite' ? ['http/protobuf', 'http/json'] : ['http/protobuf']) {
    describe(`traces to an OTLP receiver (${kind}, ${protocol})`, { skip }, () => {
      let db: TestDatabase;
      let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
      let hooks: Awaited<ReturnType<typeof startReceiver>>;
      let server: ProcessServer;
      let keys: Record<string, string>;
      const secrets: string[] = [];

      before(async () => {
        db = await create();
        otlp = await startOtlpReceiver();
        hooks = await startReceiver();
        ({ keys } = await provision(db.url, {
          admin: { permissions: ['admin'] },
          writer: { permissions: ['write'] },
          reader: { permissions: ['read'] },
        }));
        secrets.push(...Object.values(keys), EMAIL, hooks.url, DELIVERED_DATA.internet_message_id, DELIVERED_DATA.smtp_response);
        server = await startProcessServer({
          databaseUrl: db.url,
          env: {
            OTEL_TRACES_EXPORTER: 'otlp',
            OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
            OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
            OTEL_SERVICE_NAME: 'event-feed-under-test',
            OTEL_BSP_SCHEDULE_DELAY: '100',
            WEBHOOKS_ALLOW_INSECURE: '1',
            WEBHOOK_DISPATCH_INTERVAL_MS: '50',
            LOG_LEVEL: 'info',
          },
        });
      });
      after(async () => {
        await server?.stop();
        await hooks?.close();
        await otlp?.close();
        await db?.drop();
      });

      it('follows an emit to its webhook delivery and a read, with no secret in any span', async () => {
        const set = await post(server.url, '/v1/set_webhook', { url: hooks.url }, keys.admin!);
        assert.equal(set.status, 200, await set.text());
        const emitted = await post(
          server.url,
          '/v1/emit_event',
          { type: 'mail.delivered', subject: { person: { email: EMAIL }, refs: { mailbox_id: 'mbx_contact' } }, data: DELIVERED_DATA },
          keys.writer!,
        );
        assert.equal(emitted.status, 201, await emitted.text());
        await waitFor(() => hooks.received.length >= 1, 15_000, 'the delivery');
        const read = await post(server.url, '/v1/event_feed', {}, keys.reader!);
        assert.equal(read.status, 200);
        const page = (await read.json()) as { next_cursor?: string };
        if (page.next_cursor) secrets.push(page.next_cursor);

        const emitSpan = await spanNamed(otlp.spans, 'emit_event', SERVER);
        const delivery = await spanNamed(otlp.spans, 'webhook delivery', CLIENT);
        assert.equal(delivery.traceId, emitSpan.traceId, 'the delivery is in the emit trace');
        assert.ok(
          delivery.links.some((link) => link.spanId === emitSpan.spanId),
          'the delivery links to the emit',
        );
        assert.equal(delivery.attributes['http.response.status_code'], 200);
        const sent = String(hooks.received[0]!.headers.traceparent ?? '');
        assert.match(sent, new RegExp(`^00-${emitSpan.traceId}-${delivery.spanId}-01$`), 'the receiver got the attempt traceparent');

        const feedSpan = await spanNamed(otlp.spans, 'event_feed', SERVER);
        assert.equal(feedSpan.attributes['http.route'], '/v1/event_feed');
        assert.equal(feedSpan.serviceName, 'event-feed-under-test');
        const children = otlp.spans.filter((span) => span.traceId === feedSpan.traceId && span.kind === CLIENT);
        assert.ok(children.length > 0, 'the read has database spans');
        for (const child of children) {
          assert.equal(child.attributes['db.system.name'], kind === 'sqlite' ? 'sqlite' : 'postgresql');
          assert.equal(typeof child.attributes['db.operation.name'], 'string');
        }
        const batch = otlp.spans.find((span) => span.name === 'group commit' && span.links.some((l) => l.spanId === emitSpan.spanId));
        assert.ok(batch, 'the group commit span links to the emit');
        const logLines = server
          .output()
          .split('\n')
          .filter((line) => line.includes('"msg":"request"') && line.includes(feedSpan.spanId));
        assert.ok(
          logLines.some((line) => line.includes(`"trace_id":"${feedSpan.traceId}"`)),
          'the request line carries its trace',
        );

        for (const span of otlp.spans) {
          const text = JSON.stringify([span.name, span.attributes, span.events, span.links]);
          for (const secret of secrets) assert.ok(!text.includes(secret), `span ${span.name} carries a secret or personal datum`);
        }
      });

      it('continues an incoming traceparent, and names an MCP tools/call span after its operation', async () => {
        const read = await post(server.url, '/v1/event_feed', {}, keys.reader!, {
          traceparent: `00-${INCOMING_TRACE}-00f067aa0ba902b7-01`,
        });
        assert.equal(read.status, 200);
        const continued = await waitForSpan(otlp.spans, (span) => span.traceId === INCOMING_TRACE && span.kind === SERVER);
        assert.equal(continued.parentSpanId, '00f067aa0ba902b7');
        assert.equal(continued.name, 'event_feed');
        const call = await rawToolCall(server.url, keys.reader!, 'event_feed', '{}');
        assert.equal(call.status, 200);
        const mcp = await waitForSpan(otlp.spans, (span) => span.kind === SERVER && span.attributes['event_feed.transport'] === 'mcp');
        assert.equal(mcp.name, 'event_feed');
        assert.equal(mcp.attributes['rpc.method'], 'tools/call');
      });

      it('waits of held reads are events of the read span', async () => {
        const head = (await (await post(server.url, '/v1/event_feed', {}, keys.reader!)).json()) as { next_cursor: string };
        const read = await post(server.url, '/v1/event_feed', { after: head.next_cursor }, keys.reader!, { prefer: 'wait=1' });
        assert.equal(read.status, 200);
        await waitForSpan(otlp.spans, (span) => span.events.some((event) => event.name === 'held read waiting'));
      });
    });
  }
}

describe('tracing off by default', () => {
  it('exports nothing without OTEL_TRACES_EXPORTER', async () => {
    const [sqlite] = await databaseKinds();
    const db = await sqlite!.create();
    const otlp = await startOtlpReceiver();
    const { keys } = await provision(db.url, { reader: { permissions: ['read'] } });
    const server = await startProcessServer({
      databaseUrl: db.url,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_BSP_SCHEDULE_DELAY: '50', LOG_LEVEL: 'info' },
    });
    try {
      assert.equal((await post(server.url, '/v1/event_feed', {}, keys.reader!)).status, 200);
      await new Promise((resolve) => setTimeout(resolve, 400));
    } finally {
      await server.stop();
      await otlp.close();
      await db.drop();
    }
    assert.equal(otlp.requests(), 0, 'no export attempted');
    assert.ok(!server.output().includes('trace_id'), 'no trace ids in the log');
  });
});

async function waitForSpan(spans: ReceivedSpan[], predicate: (span: ReceivedSpan) => boolean): Promise<ReceivedSpan> {
  await waitFor(() => spans.some(predicate), 10_000, 'a span');
  return spans.find(predicate)!;
}

function spanNamed(spans: ReceivedSpan[], name: string, kind: number): Promise<ReceivedSpan> {
  return waitForSpan(spans, (span) => span.name === name && span.kind === kind);
}
