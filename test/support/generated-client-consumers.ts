/**
 * What an integrator writes over a client generated from the served contract, once per generator
 * (test/generated-clients.test.ts writes them next to the generated code and type-checks them
 * strictly): a page loop on `next_cursor`, narrowing an event on `type` to its own `data`, a typed
 * emit, and an error answer read through its code. Each `@ts-expect-error` is a mistake the
 * generated types must refuse: were the types too loose to see it, tsc would report the directive
 * as unused and the check would fail.
 *
 * The openapi-fetch and hey-api ones also run against the live service (they print what they saw
 * as JSON).
 * Plain strings, not files of the repository: `npm run typecheck` would check them without the
 * generated code they import.
 */

/** Shared by the three: the subject and data of the events the consumers emit. */
const SAMPLES = `
const subject = { person: { email: 'p.martin@laposte.net' }, refs: { mailbox_id: 'mbx_contact-boutique' } };
const bounced = {
  internet_message_id: '<20261121091403.4f7a2c@mail.boutique-lumiere.fr>',
  recipient: 'p.martin@laposte.net',
  bounce_type: 'hard',
  bounce_category: 'unknown_user',
  diagnostic: '550 5.1.1 user unknown',
} as const;
const delivered = {
  internet_message_id: '<20261121091403.4f7a2c@mail.boutique-lumiere.fr>',
  recipient: 'p.martin@laposte.net',
  remote_mta: 'mx1.mail.ovh.net',
  smtp_response: '250 2.0.0 Ok',
  delivery_ms: 1575,
  attempt: 1,
} as const;
`;

/** openapi-typescript's types (`api.d.ts`) with openapi-fetch, run live: READ_KEY reads, WRITE_KEY emits. */
export const OPENAPI_FETCH_CONSUMER = `import createClient from 'openapi-fetch';
import type { components, paths } from './openapi-typescript/api.js';

type EventEnvelope = components['schemas']['EventEnvelope'];
type EmitEventRequest = components['schemas']['EmitEventRequest'];
${SAMPLES}
export function summary(event: EventEnvelope): string {
  switch (event.type) {
    case 'mail.bounced':
      // @ts-expect-error a bounce has no delivery time: that is mail.delivered's data
      void event.data.delivery_ms;
      return event.data.recipient + ' bounced (' + event.data.bounce_category + ')';
    case 'mail.delivered':
      return event.data.recipient + ' delivered in ' + event.data.delivery_ms + ' ms';
    default:
      return event.type;
  }
}

export const emit: EmitEventRequest = { type: 'mail.bounced', subject, data: bounced };
// @ts-expect-error a mail.bounced event with a delivery's data
export const wrong: EmitEventRequest = { type: 'mail.bounced', subject, data: delivered };

const baseUrl = process.env.EVENT_FEED_URL ?? 'http://127.0.0.1:3000';
const reader = createClient<paths>({ baseUrl, headers: { Authorization: 'Bearer ' + process.env.READ_KEY } });
const writer = createClient<paths>({ baseUrl, headers: { Authorization: 'Bearer ' + process.env.WRITE_KEY } });

// Never called: what matters is that the compiler refuses it.
// @ts-expect-error a mail.bounced emit with a delivery's data, through the client
export const wrongCall = () => writer.POST('/v1/emit_event', { body: { type: 'mail.bounced', subject, data: delivered } });

export async function main(): Promise<void> {
  const emitted = await writer.POST('/v1/emit_event', { body: emit });
  if (emitted.error) throw new Error(emitted.error.error.message);
  const stored: EventEnvelope = emitted.data.event;

  // Every page, each with the cursor of the one before, until the cursor stops moving.
  const summaries: string[] = [];
  let after: string | undefined;
  for (;;) {
    const { data, error } = await reader.POST('/v1/event_feed', { body: after === undefined ? {} : { after } });
    if (error) throw new Error(error.error.code + ': ' + error.error.message);
    for (const event of data.events) summaries.push(summary(event));
    if (data.next_cursor === after) break;
    after = data.next_cursor;
  }

  // A read key may not emit: the error answer, typed by the contract.
  const refused = await reader.POST('/v1/emit_event', { body: emit });
  const code: 'unauthorized' | 'forbidden' | 'invalid_argument' | 'rate_limited' | 'internal' | undefined = refused.error?.error.code;
  console.log(JSON.stringify({ stored: stored.id, summaries, refused: { status: refused.response.status, code } }));
}

if (process.env.READ_KEY) await main();
`;

/** @hey-api/openapi-ts at its defaults (its fetch client and SDK, in ./hey-api), compiled and run live: KEY reads and emits. */
export const HEY_API_CONSUMER = `import { client } from './hey-api/client.gen.js';
import { emitEvent, eventFeed } from './hey-api/sdk.gen.js';
import type { EmitEventRequest, EventEnvelope } from './hey-api/types.gen.js';
${SAMPLES}
// A key with read and write; the SDK sends it as the contract's bearerAuth says.
client.setConfig({ baseUrl: process.env.EVENT_FEED_URL ?? 'http://127.0.0.1:3000', auth: () => process.env.KEY ?? '' });

export function summary(event: EventEnvelope): string {
  if (event.type === 'mail.bounced') {
    // @ts-expect-error a bounce has no delivery time: that is mail.delivered's data
    void event.data.delivery_ms;
    return event.data.recipient + ' bounced (' + event.data.bounce_category + ')';
  }
  if (event.type === 'mail.delivered') return event.data.recipient + ' delivered in ' + event.data.delivery_ms + ' ms';
  return event.type;
}

export const emit: EmitEventRequest = { type: 'mail.bounced', subject, data: bounced };
// @ts-expect-error a mail.bounced event with a delivery's data
export const wrong: EmitEventRequest = { type: 'mail.bounced', subject, data: delivered };

// @ts-expect-error a mail.bounced emit with a delivery's data, through the SDK
export const wrongCall = () => emitEvent({ body: { type: 'mail.bounced', subject, data: delivered } });

export async function main(): Promise<string[]> {
  const emitted = await emitEvent({ body: emit });
  if (emitted.error) throw new Error(emitted.error.error.code);

  const summaries: string[] = [];
  let after: string | undefined;
  for (;;) {
    const { data, error } = await eventFeed({ body: after === undefined ? {} : { after } });
    if (error) throw new Error(error.error.code + ': ' + error.error.message);
    if (!data) throw new Error('no page');
    for (const event of data.events) summaries.push(summary(event));
    if (data.next_cursor === after) break;
    after = data.next_cursor;
  }
  return summaries;
}

if (process.env.KEY) console.log(JSON.stringify(await main()));
`;

/** orval at its defaults with its fetch client (one file, ./orval/api.ts). */
export const ORVAL_CONSUMER = `import { emitEvent, eventFeed } from './orval/api.js';
import type { EmitEventRequest, EventEnvelope } from './orval/api.js';
${SAMPLES}
export function summary(event: EventEnvelope): string {
  switch (event.type) {
    case 'mail.bounced':
      // @ts-expect-error a bounce has no delivery time: that is mail.delivered's data
      void event.data.delivery_ms;
      return event.data.recipient + ' bounced (' + event.data.bounce_category + ')';
    case 'mail.delivered':
      return event.data.recipient + ' delivered in ' + event.data.delivery_ms + ' ms';
    default:
      return event.type;
  }
}

export const emit: EmitEventRequest = { type: 'mail.bounced', subject, data: bounced };
// @ts-expect-error a mail.bounced event with a delivery's data
export const wrong: EmitEventRequest = { type: 'mail.bounced', subject, data: delivered };

// @ts-expect-error a mail.bounced emit with a delivery's data, through the client
export const wrongCall = () => emitEvent({ type: 'mail.bounced', subject, data: delivered });

export async function main(): Promise<string[]> {
  const emitted = await emitEvent(emit);
  if (emitted.status !== 201 && emitted.status !== 200) throw new Error(emitted.data.error.code);

  const summaries: string[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await eventFeed(after === undefined ? {} : { after });
    if (page.status !== 200) throw new Error(page.data.error.code + ': ' + page.data.error.message);
    for (const event of page.data.events) summaries.push(summary(event));
    if (page.data.next_cursor === after) break;
    after = page.data.next_cursor;
  }
  return summaries;
}
`;
