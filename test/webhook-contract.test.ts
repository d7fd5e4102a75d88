/**
 * The published contract's `webhooks` section describes what the service really sends: a real
 * delivery, received by a local endpoint, is checked against the `webhooks` of the served
 * /openapi.json (headers and body), and its signature verifies as the section says.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ValidateFunction } from 'ajv';
import { Webhook } from 'standardwebhooks';
import { createAjv } from '../src/contract/ajv.ts';
import { databaseKinds } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor } from './support/webhook-receiver.ts';

const INSECURE = { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '40', WEBHOOK_TIMEOUT_MS: '1000' };

interface HeaderParameter {
  name: string;
  in: string;
  required?: boolean;
}

/** Validators for the delivery's body and headers, compiled from the served document itself. */
function deliveryValidators(spec: Record<string, any>, webhook: 'event' | 'test' = 'event') {
  const ajv = createAjv();
  // The document as one schema resource: its refs (#/components/…) resolve inside it.
  ajv.addSchema({ components: spec.components, webhooks: spec.webhooks }, 'served');
  const compile = (pointer: string): ValidateFunction => ajv.compile({ $ref: `served#${pointer}` });
  const base = `/webhooks/${webhook}/post`;
  const operation = spec.webhooks[webhook].post;
  const headers = (operation.parameters as HeaderParameter[]).map((parameter, i) => {
    assert.equal(parameter.in, 'header', parameter.name);
    return { ...parameter, validate: compile(`${base}/parameters/${i}/schema`) };
  });
  return { body: compile(`${base}/requestBody/content/application~1json/schema`), headers };
}

/** One emit request per event type, from the contract's own examples (EmitEventRequest's branches and their data examples). */
function oneEventPerType(spec: Record<string, any>) {
  const schemas = spec.components.schemas;
  const component = (ref: string) => schemas[ref.split('/').pop()!];
  return schemas.EmitEventRequest.oneOf.map((branch: { $ref: string }) => {
    const event = component(branch.$ref);
    return {
      type: event.properties.type.const as string,
      subject: { person: { email: 'claire.dubois@exemple.fr' }, refs: { mailbox_id: 'mbx_contact' } },
      data: component(event.properties.data.$ref).examples[0],
    };
  });
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(
    `webhook deliveries match the published webhooks section, on ${kind}`,
    { skip: skip && 'Postgres unreachable (see notice above)' },
    () => {
      let server: TestServer;
      before(async () => {
        server = await startTestServer(await create(), INSECURE);
      });
      after(async () => {
        await server.stop();
        await server.database.drop();
      });

      it('a real delivery of each event type has the documented headers and body, and its signature verifies', async () => {
        const spec = await (await fetch(`${server.url}/openapi.json`)).json();
        const validators = deliveryValidators(spec);
        const workspace = await server.workspace();
        const admin = (await server.key(workspace, ['admin'])).key;
        const writer = (await server.key(workspace, ['write'])).key;
        const receiver = await startReceiver();
        try {
          const created = await server.post('/v1/set_webhook', { url: receiver.url }, admin);
          assert.equal(created.status, 200, created.text);
          const secret: string = created.json.endpoint.secret;
          const events = oneEventPerType(spec);
          assert.ok(events.length >= 7, 'one event per type');
          const ids: string[] = [];
          for (const event of events) {
            const emitted = await server.post('/v1/emit_event', event, writer);
            assert.equal(emitted.status, 201, emitted.text);
            ids.push(emitted.json.event.id);
          }
          await waitFor(() => receiver.received.length >= events.length, 10_000, 'every delivery');

          const verifier = new Webhook(secret.replace(/^whsec_/, ''));
          for (const delivery of receiver.received) {
            for (const header of validators.headers) {
              const value = delivery.headers[header.name.toLowerCase()];
              if (header.required) assert.equal(typeof value, 'string', `header ${header.name} is sent`);
              if (value !== undefined)
                assert.ok(
                  header.validate(value),
                  `header ${header.name}: ${JSON.stringify(value)} ${JSON.stringify(header.validate.errors)}`,
                );
            }
            assert.match(String(delivery.headers['content-type']), /^application\/json\b/);
            const body: { id: string; type: string } = JSON.parse(delivery.body);
            assert.ok(validators.body(body), `body of ${body.type}: ${JSON.stringify(validators.body.errors)}`);
            assert.equal(delivery.headers['webhook-id'], body.id, 'webhook-id is the event id');
            // What the section tells a receiver to do, done by a Standard Webhooks library.
            assert.deepEqual(verifier.verify(delivery.body, delivery.headers as Record<string, string>), body);
          }
          assert.deepEqual(receiver.received.map((d) => JSON.parse(d.body).id).sort(), [...ids].sort(), 'every event delivered once');
        } finally {
          await receiver.close();
        }
      });

      it('a test delivery (test_webhook) has the headers and body of the section’s `test` webhook, and verifies', async () => {
        const spec = await (await fetch(`${server.url}/openapi.json`)).json();
        const validators = deliveryValidators(spec, 'test');
        const admin = (await server.key(await server.workspace(), ['admin'])).key;
        const receiver = await startReceiver();
        try {
          const { secret } = (await server.post('/v1/set_webhook', { url: receiver.url }, admin)).json.endpoint;
          const tested = await server.post('/v1/test_webhook', { url: receiver.url }, admin);
          assert.equal(tested.status, 200, tested.text);
          const [delivery] = receiver.received;
          for (const header of validators.headers) {
            const value = delivery!.headers[header.name.toLowerCase()];
            assert.equal(typeof value, 'string', `header ${header.name} is sent`);
            assert.ok(header.validate(value), `header ${header.name}: ${JSON.stringify(value)} ${JSON.stringify(header.validate.errors)}`);
          }
          const body = JSON.parse(delivery!.body);
          assert.ok(validators.body(body), JSON.stringify(validators.body.errors));
          assert.deepEqual(new Webhook(secret).verify(delivery!.body, delivery!.headers as Record<string, string>), body);
        } finally {
          await receiver.close();
        }
      });

      it('the section says what a receiver needs: the envelope schema, the three Standard Webhooks headers, and how answers are read', async () => {
        const spec = await (await fetch(`${server.url}/openapi.json`)).json();
        const operation = spec.webhooks?.event?.post;
        assert.ok(operation, 'webhooks.event.post');
        assert.equal(operation.requestBody.content['application/json'].schema.$ref, '#/components/schemas/EventEnvelope');
        const names = (operation.parameters as HeaderParameter[]).map((p) => p.name);
        for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) assert.ok(names.includes(name), name);
        assert.deepEqual(Object.keys(operation.responses).sort(), ['2XX', '410', '429', '503', 'default']);
      });
    },
  );
}
