/**
 * The AsyncAPI 3 document a live service serves (/asyncapi.json, /asyncapi.yaml, linked from
 * /docs): @asyncapi/parser 3 (pinned in test/outside-tools, run with Node 22) reads both with no
 * diagnostic at all; it has a delivery message per event type of schemas/event-types.json, the
 * test delivery and the stream's messages; its schemas are the OpenAPI document's; and what the
 * service really sends matches it: a webhook delivery of each type and a test delivery (headers
 * and body, against the message of their type), and the events of a stream.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import { sqliteDatabase } from './support/databases.ts';
import { outsideTools, type OutsideTools } from './support/outside-tools.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor } from './support/webhook-receiver.ts';

const TYPES: Array<{ type: string; data: string }> = JSON.parse(
  readFileSync(new URL('../schemas/event-types.json', import.meta.url), 'utf8'),
).types;
const pascalOf = (type: string) =>
  type
    .split(/[._]/)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');

/** Parses with @asyncapi/parser under Node 22 and prints what it said, and what it read. */
const PARSE = `import { Parser } from '@asyncapi/parser';
import { readFileSync } from 'node:fs';
const { document, diagnostics } = await new Parser().parse(readFileSync(process.argv[2], 'utf8'));
console.log(JSON.stringify({
  version: document?.version(),
  diagnostics: diagnostics.map((d) => ({ severity: d.severity, code: d.code, path: d.path.join('.'), message: d.message })),
  messages: document ? document.allMessages().all().map((m) => m.id()) : [],
  operations: document ? document.allOperations().all().map((o) => ({ id: o.id(), action: o.action(), channel: o.channels().all().map((c) => c.address()), messages: o.messages().all().map((m) => m.id()) })) : [],
}));
`;

describe('the AsyncAPI document (/asyncapi.json, /asyncapi.yaml)', () => {
  let server: TestServer;
  let tools: OutsideTools;
  let dir: string;
  let doc: Record<string, any>;
  /** The document's schemas, compiled as AsyncAPI reads them (a JSON Schema draft-07 superset). */
  let schema: (pointer: string) => ValidateFunction;

  before(async () => {
    tools = await outsideTools();
    server = await startTestServer(await sqliteDatabase(), {
      WEBHOOKS_ALLOW_INSECURE: '1',
      WEBHOOK_DISPATCH_INTERVAL_MS: '40',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    dir = mkdtempSync(join(tmpdir(), 'asyncapi-'));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ private: true, type: 'module' }));
    symlinkSync(join(tools.dir, 'node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, 'parse.mjs'), PARSE);
    doc = await (await fetch(`${server.url}/asyncapi.json`)).json();
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajvFormats.default(ajv);
    ajv.addSchema({ components: doc.components }, 'asyncapi');
    schema = (pointer) => ajv.compile({ $ref: `asyncapi#${pointer}` });
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const path of ['/asyncapi.json', '/asyncapi.yaml']) {
    it(`@asyncapi/parser reads ${path} as AsyncAPI 3 with no diagnostic, errors or warnings`, async () => {
      const response = await fetch(`${server.url}${path}`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', path.endsWith('.json') ? /^application\/json/ : /yaml/);
      writeFileSync(join(dir, 'document'), await response.text());
      const parsed = await new Promise<string>((resolve, reject) =>
        execFile(
          tools.node22,
          ['parse.mjs', 'document'],
          { cwd: dir, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
          (error, stdout, stderr) => (error ? reject(new Error(stderr || String(error))) : resolve(stdout)),
        ),
      );
      const { version, diagnostics, messages, operations } = JSON.parse(parsed);
      assert.match(version, /^3\./);
      assert.deepEqual(diagnostics, []);
      const deliveries = TYPES.map((t) => `${pascalOf(t.type)}Delivery`);
      assert.deepEqual(new Set(messages), new Set([...deliveries, 'TestDelivery', 'StreamedEvent', 'StreamError']));
      const byId = Object.fromEntries(operations.map((o: { id: string }) => [o.id, o]));
      assert.deepEqual(byId.deliverEvent, { id: 'deliverEvent', action: 'send', channel: [null], messages: deliveries });
      assert.deepEqual(byId.sendTestDelivery.messages, ['TestDelivery']);
      assert.deepEqual(byId.streamEvents, {
        id: 'streamEvents',
        action: 'send',
        channel: ['/v1/event_feed'],
        messages: ['StreamedEvent', 'StreamError'],
      });
    });
  }

  it('/docs links both documents', async () => {
    const page = await (await fetch(`${server.url}/docs`)).text();
    for (const path of ['/asyncapi.json', '/asyncapi.yaml', '/openapi.json']) assert.ok(page.includes(`href="${path}"`), path);
  });

  it("takes its schemas from the contract: each delivery's payload is its type's envelope, the stream's the union, as /openapi.json has them", async () => {
    const openapi = await (await fetch(`${server.url}/openapi.json`)).json();
    for (const t of TYPES) {
      const message = doc.components.messages[`${pascalOf(t.type)}Delivery`];
      assert.equal(message.name, t.type);
      assert.equal(message.payload.$ref, `#/components/schemas/${pascalOf(t.type)}Event`);
      assert.equal(doc.components.schemas[`${pascalOf(t.type)}Event`].properties.type.const, t.type);
    }
    assert.equal(doc.components.messages.StreamedEvent.payload.$ref, '#/components/schemas/EventEnvelope');
    assert.equal(doc.components.schemas.EventEnvelope.discriminator, 'type');
    // Every schema the contract also has is the contract's (less what only OpenAPI or MCP reads).
    const strip = (value: unknown): unknown =>
      Array.isArray(value)
        ? value.map(strip)
        : typeof value === 'object' && value !== null
          ? Object.fromEntries(
              Object.entries(value)
                .filter(([k]) => !k.startsWith('x-') && k !== 'discriminator' && k !== '$schema')
                .map(([k, v]) => [k, strip(v)]),
            )
          : value;
    const shared = Object.keys(doc.components.schemas).filter((name) => name in openapi.components.schemas);
    assert.ok(shared.length >= 2 * TYPES.length, `shared schemas: ${shared.join(', ')}`);
    for (const name of shared) assert.deepEqual(strip(doc.components.schemas[name]), strip(openapi.components.schemas[name]), name);
    const headers = Object.keys(doc.components.schemas.EventDeliveryHeaders.properties);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) assert.ok(headers.includes(name), name);
  });

  it('a real delivery of each type, and a test delivery, match their messages (headers and payload)', async () => {
    const workspace = await server.workspace();
    const admin = (await server.key(workspace, ['admin'])).key;
    const writer = (await server.key(workspace, ['write'])).key;
    const receiver = await startReceiver();
    try {
      assert.equal((await server.post('/v1/set_webhook', { url: receiver.url }, admin)).status, 200);
      const openapi = await (await fetch(`${server.url}/openapi.json`)).json();
      for (const t of TYPES) {
        const data =
          openapi.components.schemas[JSON.parse(readFileSync(new URL(`../schemas/${t.data}`, import.meta.url), 'utf8')).title].examples[0];
        const emitted = await server.post(
          '/v1/emit_event',
          { type: t.type, subject: { person: { email: 'claire.dubois@exemple.fr' }, refs: { mailbox_id: 'mbx_contact' } }, data },
          writer,
        );
        assert.equal(emitted.status, 201, emitted.text);
      }
      await waitFor(() => receiver.received.length >= TYPES.length, 10_000, 'every delivery');
      assert.equal((await server.post('/v1/test_webhook', { url: receiver.url }, admin)).status, 200);
      await waitFor(() => receiver.received.length >= TYPES.length + 1, 10_000, 'the test delivery');

      for (const delivery of receiver.received) {
        const body: { type: string } = JSON.parse(delivery.body);
        const message = body.type === 'webhook.test' ? 'TestDelivery' : `${pascalOf(body.type)}Delivery`;
        const { headers, payload } = doc.components.messages[message];
        const validHeaders = schema(headers.$ref.slice(1));
        const validPayload = schema(payload.$ref.slice(1));
        const sent = Object.fromEntries(
          Object.keys(doc.components.schemas[headers.$ref.split('/').pop()].properties).map((name) => [name, delivery.headers[name]]),
        );
        assert.ok(validHeaders(sent), `${message} headers ${JSON.stringify(sent)}: ${JSON.stringify(validHeaders.errors)}`);
        assert.ok(validPayload(body), `${message} payload: ${JSON.stringify(validPayload.errors)}`);
        // Another type's message refuses it: the payloads really are per type.
        const other = doc.components.messages[body.type === 'mail.received' ? 'MailSentDelivery' : 'MailReceivedDelivery'];
        assert.equal(schema(other.payload.$ref.slice(1))(body), false, `${message} is not another type's`);
      }
    } finally {
      await receiver.close();
    }
  });

  it("the stream's events are its StreamedEvent messages", async () => {
    const workspace = await server.workspace();
    const reader = (await server.key(workspace, ['read'])).key;
    const writer = (await server.key(workspace, ['write'])).key;
    const openapi = await (await fetch(`${server.url}/openapi.json`)).json();
    const data = openapi.components.schemas.MailBouncedData.examples[0];
    for (let i = 0; i < 3; i++) {
      const emitted = await server.post(
        '/v1/emit_event',
        { type: 'mail.bounced', subject: { person: { email: 'p.martin@laposte.net' }, refs: {} }, data },
        writer,
      );
      assert.equal(emitted.status, 201, emitted.text);
    }
    const abort = new AbortController();
    const response = await fetch(`${server.url}${doc.channels.eventStream.address}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${reader}`, accept: 'text/event-stream', 'content-type': 'application/json' },
      body: '{}',
      signal: abort.signal,
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body! as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      if ((text.match(/^data: /gm) ?? []).length >= 3) break;
    }
    abort.abort();
    const valid = schema(doc.components.messages.StreamedEvent.payload.$ref.slice(1));
    const events = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]!));
    assert.equal(events.length, 3);
    for (const event of events) assert.ok(valid(event), JSON.stringify(valid.errors));
  });
});
