import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { databaseKinds } from './support/databases.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { startTestServer, type TestServer } from './support/server.ts';

type Response = Awaited<ReturnType<TestServer['post']>>;

const EMIT = '/v1/emit_event';
const FEED = '/v1/event_feed';
const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/;
const UTC_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ENVELOPE_KEYS = ['id', 'type', 'occurred_at', 'account', 'subject', 'data', 'v'];

const person = { email: 'claire.dubois@exemple.fr', name: 'Claire Dubois' };
const refs = (mailbox = 'mbx_a') => ({ mailbox_id: mailbox, message_id: 'msg_7Hq2LmXv9RtK', thread_id: 'thr_Wc4nZp8sBd' });

/** One full, valid `data` per event type (fields from schemas/data/*.schema.json). */
const DATA: Record<string, Record<string, unknown>> = {
  'mail.received': sampleEvent().data,
  'mail.sent': {
    internet_message_id: '<20261121091403.4f7a2c@mail.boutique-lumiere.fr>',
    from: { email: 'contact@boutique-lumiere.fr', name: 'Boutique Lumière' },
    to: [{ email: 'claire.dubois@exemple.fr', name: 'Claire Dubois' }],
    cc: [{ email: 'julien.moreau@exemple.fr' }],
    bcc_count: 0,
    subject_line: 'Re: Question sur ma commande n° 10482',
    size_bytes: 12876,
    attachment_count: 0,
  },
  'mail.delivered': {
    internet_message_id: '<20261121091403.4f7a2c@mail.boutique-lumiere.fr>',
    recipient: 'claire.dubois@exemple.fr',
    remote_mta: 'mx1.mail.ovh.net',
    smtp_response: '250 2.0.0 Ok: queued as 4Y9kQz3WJmz1w',
    delivery_ms: 1575,
    attempt: 1,
  },
  'mail.deferred': {
    internet_message_id: '<20261121085512.91be0d@mail.boutique-lumiere.fr>',
    recipient: 'marc.lefevre@orange.fr',
    smtp_code: 421,
    enhanced_status: '4.7.0',
    diagnostic: '421 4.7.0 Trop de connexions simultanées, réessayez plus tard',
    remote_mta: 'smtp-in.orange.fr',
    attempt: 2,
    next_attempt_at: '2026-11-21T09:45:40.000Z',
  },
  'mail.bounced': {
    internet_message_id: '<20261121091403.4f7a2c@mail.boutique-lumiere.fr>',
    recipient: 'p.martin@laposte.net',
    bounce_type: 'hard',
    bounce_category: 'unknown_user',
    smtp_code: 550,
    enhanced_status: '5.1.1',
    diagnostic: '550 5.1.1 <p.martin@laposte.net>: adresse inconnue / user unknown',
    remote_mta: 'smtpz4.laposte.net',
  },
  'mail.complained': {
    internet_message_id: '<20261118140211.c2d9e1@mail.boutique-lumiere.fr>',
    recipient: 'sophie.bernard@yahoo.fr',
    feedback_type: 'abuse',
    feedback_provider: 'Yahoo',
    user_agent: 'Yahoo!-Mail-Feedback/2.0',
  },
  'mail.rejected': {
    stage: 'inbound',
    reason: 'spam',
    smtp_code: 554,
    diagnostic: '554 5.7.1 Message refusé : contenu identifié comme spam (score 14.2)',
    from: { email: 'promo@offres-exceptionnelles.biz' },
    recipient: 'contact@boutique-lumiere.fr',
    internet_message_id: '<a81f33e0.5521@offres-exceptionnelles.biz>',
  },
};

/** The required fields of each type, read from its schema file. */
function requiredOf(type: string): string[] {
  const file = new URL(`../schemas/data/${type.replace('.', '-')}.schema.json`, import.meta.url);
  return JSON.parse(readFileSync(file, 'utf8')).required;
}

const minimal = (type: string) => Object.fromEntries(requiredOf(type).map((k) => [k, DATA[type]![k]]));

function assertError(res: Response, status: number, code: string, messagePattern?: RegExp, label = ''): string {
  const where = `${label} → ${res.status} ${res.text.slice(0, 400)}`;
  assert.equal(res.status, status, where);
  assert.equal(contractErrors('Error', res.json), null, where);
  assert.deepEqual(Object.keys(res.json), ['error'], where);
  assert.deepEqual(Object.keys(res.json.error), ['code', 'message'], where);
  assert.equal(res.json.error.code, code, where);
  if (messagePattern) assert.match(res.json.error.message, messagePattern, where);
  assert.ok(res.headers.get('x-request-id'), `${where}: X-Request-Id`);
  return res.json.error.message;
}

/** A 201/200 emit answer: exactly {event}, contract-valid; returns the envelope and its raw text. */
function assertEmitted(res: Response, status: 201 | 200, label = ''): { event: any; envelopeText: string } {
  assert.equal(res.status, status, `${label} ${res.text.slice(0, 400)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.ok(res.headers.get('x-request-id'), 'X-Request-Id');
  assert.deepEqual(Object.keys(res.json), ['event'], label);
  assert.equal(contractErrors('EmitEventResponse', res.json), null, label);
  assert.ok(res.text.startsWith('{"event":') && res.text.endsWith('}'), res.text);
  return { event: res.json.event, envelopeText: res.text.slice('{"event":'.length, -1) };
}

/** The instant of a `…Z` date-time written at +05:30 (same instant, other spelling). */
function offsetSpelling(utc: string): string {
  const shifted = new Date(Date.parse(utc) + 330 * 60_000).toISOString();
  return shifted.replace('Z', '+05:30');
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`POST /v1/emit_event on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(await create());
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    async function workspaceWithKey(permissions: Array<'read' | 'write' | 'admin'> = ['read', 'write'], mailboxes: string[] | null = null) {
      const ws = await server.workspace();
      const { key } = await server.key(ws, permissions, mailboxes);
      return { ws, key };
    }

    async function feedText(key: string, after?: string) {
      const res = await server.post(FEED, after === undefined ? { limit: 500 } : { after, limit: 500 }, key);
      assert.equal(res.status, 200, res.text);
      return res;
    }

    describe('envelope', () => {
      it('answers 201 with the envelope, server fields filled; the feed returns the same bytes', async () => {
        const { ws, key } = await workspaceWithKey();
        const input = sampleEvent('mbx_a', 1);
        const before = Date.now();
        const res = await server.post(EMIT, input, key);
        const afterMs = Date.now();
        const { event, envelopeText } = assertEmitted(res, 201);
        assert.deepEqual(Object.keys(event), ENVELOPE_KEYS);
        assert.match(event.id, EVENT_ID);
        assert.equal(event.type, 'mail.received');
        assert.equal(event.account, ws);
        assert.equal(event.v, 1);
        assert.deepEqual(event.subject, input.subject);
        assert.deepEqual(event.data, input.data);
        assert.match(event.occurred_at, UTC_MS);
        const at = Date.parse(event.occurred_at);
        assert.ok(at >= before && at <= afterMs, `occurred_at ${event.occurred_at} is the time of the call`);

        const feed = await feedText(key);
        assert.deepEqual(feed.json.events, [event]);
        assert.equal(feed.text, `{"events":[${envelopeText}],"next_cursor":${JSON.stringify(feed.json.next_cursor)}}`);
        const row = await server.db('events').where({ workspace_id: ws }).first();
        assert.equal(row.envelope, envelopeText);
        assert.equal(row.id, event.id);
      });

      it('accepts one event of each type, full and with only the required fields', async () => {
        const { ws, key } = await workspaceWithKey();
        const enumTypes = JSON.parse(readFileSync(new URL('../schemas/event-types.json', import.meta.url), 'utf8')).types.map(
          (entry: { type: string }) => entry.type,
        );
        assert.deepEqual(Object.keys(DATA).sort(), [...enumTypes].sort(), 'a sample for every type');
        const emitted: string[] = [];
        for (const type of enumTypes as string[]) {
          for (const data of [DATA[type]!, minimal(type)]) {
            const input = { type, subject: { person, refs: type === 'mail.rejected' ? {} : refs() }, data };
            const { event, envelopeText } = assertEmitted(await server.post(EMIT, input, key), 201, type);
            assert.equal(event.type, type);
            assert.equal(event.account, ws);
            assert.deepEqual(event.data, data);
            assert.deepEqual(event.subject, input.subject);
            emitted.push(envelopeText);
          }
        }
        const feed = await feedText(key);
        assert.equal(feed.text, `{"events":[${emitted.join(',')}],"next_cursor":${JSON.stringify(feed.json.next_cursor)}}`);
      });

      it('events emitted one after another come back in the same order', async () => {
        const { key } = await workspaceWithKey();
        const sent: any[] = [];
        for (let i = 0; i < 25; i++) {
          const type = Object.keys(DATA)[i % 7]!;
          sent.push(
            assertEmitted(await server.post(EMIT, { type, subject: { person, refs: refs(`mbx_${i % 3}`) }, data: DATA[type] }, key), 201)
              .event,
          );
        }
        const events: any[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await server.post(FEED, after ? { after, limit: 4 } : { limit: 4 }, key);
          if (page.json.events.length === 0) break;
          events.push(...page.json.events);
          after = page.json.next_cursor;
        }
        assert.deepEqual(events, sent);
        const ids = sent.map((e) => e.id);
        assert.deepEqual([...ids].sort(), ids, 'server ids sort in emission order');
      });
    });

    describe('validation', () => {
      it('refuses an unknown or missing type, and extra or server-owned top-level properties', async () => {
        const { key } = await workspaceWithKey();
        const base = sampleEvent('mbx_a');
        const cases: Array<[string, unknown, RegExp]> = [
          ['unknown type', { ...base, type: 'mail.opened' }, /\btype\b/],
          ['type of other case', { ...base, type: 'MAIL.RECEIVED' }, /\btype\b/],
          ['type null', { ...base, type: null }, /\btype\b/],
          ['missing type', { subject: base.subject, data: base.data }, /"type"/],
          ['missing subject', { type: base.type, data: base.data }, /"subject"/],
          ['missing data', { type: base.type, subject: base.subject }, /"data"/],
          ['empty body', {}, /"(type|subject|data)"/],
          ['extra property', { ...base, foo: 1 }, /"foo"/],
          ['account given', { ...base, account: 'ws_01M6DMBE00KKNS70D02MHHS0KA' }, /"account"/],
          ['v given', { ...base, v: 1 }, /"v"/],
          ['bad id', { ...base, id: 'evt_123' }, /\bid\b/],
          ['lower-case id', { ...base, id: 'evt_01m7yp7pag3yr9fgtgp73h5r7w' }, /\bid\b/],
          ['occurred_at not a date-time', { ...base, occurred_at: 'yesterday' }, /occurred_at/],
          ['occurred_at without zone', { ...base, occurred_at: '2026-11-21T10:00:00' }, /occurred_at/],
          ['occurred_at a number', { ...base, occurred_at: 1763719200000 }, /occurred_at/],
          ['occurred_at too long', { ...base, occurred_at: '2026-11-21T10:00:00.123456789012345+02:00' }, /occurred_at/],
          ['Feb 30', { ...base, occurred_at: '2026-02-30T10:00:00Z' }, /occurred_at/],
          ['Feb 29 of a common year', { ...base, occurred_at: '2026-02-29T10:00:00Z' }, /occurred_at/],
        ];
        for (const [label, body, pattern] of cases) {
          assertError(await server.post(EMIT, body, key), 400, 'invalid_argument', pattern, label);
        }
      });

      it('refuses data that violates its type schema, naming the field path', async () => {
        const { key } = await workspaceWithKey();
        const base = sampleEvent('mbx_a');
        const { spam_verdict: _omit, ...withoutVerdict } = base.data;
        const cases: Array<[string, unknown, RegExp]> = [
          ['missing required field', { ...base, data: withoutVerdict }, /data\.spam_verdict/],
          ['wrong type', { ...base, data: { ...base.data, size_bytes: 'big' } }, /data\.size_bytes/],
          ['fractional integer', { ...base, data: { ...base.data, attachment_count: 1.5 } }, /data\.attachment_count/],
          ['out of range', { ...base, data: { ...base.data, spam_score: 5000 } }, /data\.spam_score/],
          ['bad enum', { ...base, data: { ...base.data, spam_verdict: 'ham' } }, /data\.spam_verdict/],
          ['nested bad email', { ...base, data: { ...base.data, to: [{ email: 'not-an-email' }] } }, /data\.to(\.0|\[0\])\.email/],
          [
            'nested extra',
            { ...base, data: { ...base.data, from: { email: 'a@b.fr', phone: '1' } } },
            /"phone"[^]*data\.from|data\.from[^]*"phone"/,
          ],
          ['empty to', { ...base, data: { ...base.data, to: [] } }, /data\.to/],
          ['data not an object', { ...base, data: 'x' }, /\bdata\b/],
          ['data an array', { ...base, data: [] }, /\bdata\b/],
          ['data of another type', { ...base, type: 'mail.delivered' }, /data\.[a-z_]+|"[a-z_]+"/],
          [
            'delivered: 5xx response',
            { type: 'mail.delivered', subject: base.subject, data: { ...DATA['mail.delivered'], smtp_response: '550 no' } },
            /data\.smtp_response/,
          ],
          [
            'deferred: bad next_attempt_at',
            { type: 'mail.deferred', subject: base.subject, data: { ...DATA['mail.deferred'], next_attempt_at: 'soon' } },
            /data\.next_attempt_at/,
          ],
          [
            'bounced: bad bounce_type',
            { type: 'mail.bounced', subject: base.subject, data: { ...DATA['mail.bounced'], bounce_type: 'medium' } },
            /data\.bounce_type/,
          ],
          ['bad mailbox id', { ...base, subject: { ...base.subject, refs: { mailbox_id: 'sales' } } }, /subject\.refs\.mailbox_id/],
          ['missing person', { ...base, subject: { refs: {} } }, /subject\.person/],
          ['extra ref', { ...base, subject: { ...base.subject, refs: { workspace_id: 'x' } } }, /"workspace_id"/],
        ];
        const extra = await server.post(EMIT, { ...base, data: { ...base.data, tracking_pixel: true } }, key);
        const message = assertError(extra, 400, 'invalid_argument', /"tracking_pixel"/, 'extra data property');
        assert.match(message, /\bdata\b/, message);
        for (const [label, body, pattern] of cases) {
          assertError(await server.post(EMIT, body, key), 400, 'invalid_argument', pattern, label);
        }
        const feed = await feedText(key);
        assert.deepEqual(feed.json.events, [], 'nothing stored');
      });

      it('stores occurred_at with an offset in UTC with milliseconds', async () => {
        const { key } = await workspaceWithKey();
        const cases: Array<[string, string]> = [
          ['2026-11-21T10:00:00+02:00', '2026-11-21T08:00:00.000Z'],
          ['2026-11-21T10:00:00.5+02:00', '2026-11-21T08:00:00.500Z'],
          ['2026-11-21T01:30:00-05:30', '2026-11-21T07:00:00.000Z'],
          ['2026-11-21T09:14:03.512Z', '2026-11-21T09:14:03.512Z'],
          ['2026-01-01T00:30:00+01:00', '2025-12-31T23:30:00.000Z'],
          ['2024-02-29T12:00:00Z', '2024-02-29T12:00:00.000Z'],
          ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
        ];
        for (const [given, stored] of cases) {
          const { event } = assertEmitted(await server.post(EMIT, { ...sampleEvent(), occurred_at: given }, key), 201, given);
          assert.equal(event.occurred_at, stored, given);
        }
      });

      it('occurred_at: every value the contract accepts is stored as its instant in UTC with milliseconds, or refused as the contract says', async () => {
        const { ws, key } = await workspaceWithKey();
        const saved = process.env.TZ;
        // A far-off local zone, so a date read as local time would show.
        process.env.TZ = 'Pacific/Kiritimati';
        // given → stored occurred_at, or the refusal's message
        const cases: Array<[string, string | RegExp]> = [
          ['2026-11-21T10:00:00+01', '2026-11-21T09:00:00.000Z'],
          ['2026-11-21T10:00:00+0100', '2026-11-21T09:00:00.000Z'],
          ['2026-11-21T10:00:00+01:00', '2026-11-21T09:00:00.000Z'],
          ['2026-11-21T10:00:00-00:00', '2026-11-21T10:00:00.000Z'],
          ['2026-11-21T10:00:00-0530', '2026-11-21T15:30:00.000Z'],
          ['2026-11-21T10:00:00+23:59', '2026-11-20T10:01:00.000Z'],
          ['2026-01-01T00:30:00+01', '2025-12-31T23:30:00.000Z'],
          ['2026-11-21T10:00:00z', '2026-11-21T10:00:00.000Z'],
          ['2026-11-21t10:00:00Z', '2026-11-21T10:00:00.000Z'],
          ['2026-11-21 10:00:00Z', '2026-11-21T10:00:00.000Z'],
          ['2026-11-21T10:00:00.5Z', '2026-11-21T10:00:00.500Z'],
          ['2026-11-21T10:00:00.12Z', '2026-11-21T10:00:00.120Z'],
          ['2026-11-21T10:00:00.123Z', '2026-11-21T10:00:00.123Z'],
          ['2026-11-21T10:00:00.1239Z', '2026-11-21T10:00:00.123Z'],
          ['2026-11-21T10:00:00.12399Z', '2026-11-21T10:00:00.123Z'],
          ['2026-11-21T10:00:00.123999Z', '2026-11-21T10:00:00.123Z'],
          ['2026-11-21T10:00:00.1234567Z', '2026-11-21T10:00:00.123Z'],
          ['2026-11-21T10:00:00.12345678Z', '2026-11-21T10:00:00.123Z'],
          ['2026-12-31T23:59:59.999999999Z', '2026-12-31T23:59:59.999Z'],
          ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
          ['0000-01-01T00:00:00Z', '0000-01-01T00:00:00.000Z'],
          ['0099-03-01T12:00:00+12:00', '0099-03-01T00:00:00.000Z'],
          ['1969-07-20T20:17:40Z', '1969-07-20T20:17:40.000Z'],
          ['1970-01-01T00:59:59.999+01:00', '1969-12-31T23:59:59.999Z'],
          ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
          ['2024-02-29T12:00:00Z', '2024-02-29T12:00:00.000Z'],
          ['2016-12-31T23:59:60Z', /^occurred_at "2016-12-31T23:59:60Z" is not a representable UTC date-time: it is a leap second/],
          ['2017-01-01T00:59:60+01:00', /leap second/],
          [
            '0000-01-01T00:30:00+01:00',
            /^occurred_at "0000-01-01T00:30:00\+01:00" is not a representable UTC date-time: in UTC it falls outside the years 0000-9999$/,
          ],
          ['9999-12-31T23:30:00-01:00', /outside the years 0000-9999/],
          ['2026-02-30T10:00:00Z', /^occurred_at must be a valid date-time$/],
          ['1900-02-29T10:00:00Z', /^occurred_at must be a valid date-time$/],
        ];
        try {
          const wrong: string[] = [];
          for (const [given, expected] of cases) {
            const res = await server.post(EMIT, { ...sampleEvent(), occurred_at: given }, key);
            if (typeof expected === 'string') {
              if (res.status !== 201) {
                wrong.push(`${given} → ${res.status} ${res.text.slice(0, 200)}`);
                continue;
              }
              const { event } = assertEmitted(res, 201, given);
              if (event.occurred_at !== expected) wrong.push(`${given} → ${event.occurred_at}, not ${expected}`);
              const row = await server.db('events').where({ workspace_id: ws, id: event.id }).first();
              assert.equal(Number(row.occurred_at_ms), Date.parse(expected), `${given}: the column list_events filters on`);
            } else if (res.status !== 400) {
              wrong.push(`${given} → ${res.status} ${res.text.slice(0, 200)}`);
            } else {
              assertError(res, 400, 'invalid_argument', expected, given);
            }
          }
          assert.deepEqual(wrong, []);
        } finally {
          if (saved === undefined) delete process.env.TZ;
          else process.env.TZ = saved;
        }
      });

      it('never answers 500 to odd but format-valid date-times', async () => {
        const { key } = await workspaceWithKey();
        const saved = process.env.TZ;
        // A far-off local zone, so a date read as local time would show.
        process.env.TZ = 'Pacific/Kiritimati';
        try {
          // given → UTC values accepted if the date is taken (null: it must be refused)
          const cases: Array<[string, string[] | null]> = [
            ['2026-06-30T23:59:60Z', ['2026-06-30T23:59:59.999Z', '2026-07-01T00:00:00.000Z']],
            ['2026-07-01T01:59:60+02:00', ['2026-06-30T23:59:59.999Z', '2026-07-01T00:00:00.000Z']],
            ['2026-11-21T23:59:60+00:00', ['2026-11-21T23:59:59.999Z', '2026-11-22T00:00:00.000Z']],
            ['2026-11-21t10:00:00z', ['2026-11-21T10:00:00.000Z']],
            ['2026-11-21 10:00:00Z', ['2026-11-21T10:00:00.000Z']],
            ['2026-11-21T10:00:00+02', ['2026-11-21T08:00:00.000Z']],
            ['2026-11-21T10:00:00+0200', ['2026-11-21T08:00:00.000Z']],
            ['2026-11-21T10:00:00-00:00', ['2026-11-21T10:00:00.000Z']],
            ['2026-11-21T10:00:00+23:59', ['2026-11-20T10:01:00.000Z']],
            ['2026-11-21T10:00:00.123456789Z', ['2026-11-21T10:00:00.123Z']],
            ['2026-11-21T10:00:00.9999Z', ['2026-11-21T10:00:00.999Z', '2026-11-21T10:00:01.000Z']],
            ['1969-12-31T23:59:59.999Z', ['1969-12-31T23:59:59.999Z']],
            ['0000-01-01T00:00:00Z', ['0000-01-01T00:00:00.000Z']],
            ['9999-12-31T23:59:59.999-23:59', null],
          ];
          const wrong: string[] = [];
          for (const [given, accepted] of cases) {
            const res = await server.post(EMIT, { ...sampleEvent(), occurred_at: given }, key);
            if (res.status === 201) {
              assertEmitted(res, 201, given);
              if (!accepted?.includes(res.json.event.occurred_at)) wrong.push(`${given} → 201 ${res.json.event.occurred_at}`);
            } else if (res.status === 400) {
              assertError(res, 400, 'invalid_argument', /occurred_at/, given);
            } else {
              wrong.push(`${given} → ${res.status} ${res.text}`);
            }
          }
          assert.deepEqual(wrong, []);
        } finally {
          if (saved === undefined) delete process.env.TZ;
          else process.env.TZ = saved;
        }
      });
    });

    describe('idempotency', () => {
      const CLIENT_ID = 'evt_01M7YP7PAG3YR9FGTGP73H5R7W';

      it('a retry with the same id and content answers 200 with the stored event, byte for byte, and stores nothing', async () => {
        const { ws, key } = await workspaceWithKey();
        const input = { type: 'mail.delivered', subject: { person, refs: refs() }, data: DATA['mail.delivered'], id: CLIENT_ID };
        const first = await server.post(EMIT, input, key);
        const { event } = assertEmitted(first, 201);
        assert.equal(event.id, CLIENT_ID);
        await new Promise((r) => setTimeout(r, 15));
        const retry = await server.post(EMIT, input, key);
        assertEmitted(retry, 200);
        assert.equal(retry.text, first.text, 'same bytes, same default occurred_at');
        // key order of the request does not make it other content
        const reordered = { id: CLIENT_ID, data: { ...DATA['mail.delivered'] }, subject: { refs: refs(), person }, type: 'mail.delivered' };
        const again = await server.post(EMIT, reordered, key);
        assertEmitted(again, 200);
        assert.equal(again.text, first.text);
        const feed = await feedText(key);
        assert.deepEqual(feed.json.events, [event]);
        const counter = await server.db('feed_counters').where({ workspace_id: ws }).first();
        assert.equal(Number(counter.last_seq), 1);

        // With an explicit occurred_at, an equal instant spelled otherwise is the same content.
        const timed = { ...input, id: 'evt_01M7YP7PAG3YR9FGTGP73H5R7X', occurred_at: '2026-11-21T10:00:00+02:00' };
        const t1 = await server.post(EMIT, timed, key);
        assertEmitted(t1, 201);
        const t2 = await server.post(EMIT, { ...timed, occurred_at: '2026-11-21T10:00:00+02:00' }, key);
        assertEmitted(t2, 200);
        assert.equal(t2.text, t1.text);
      });

      it('the same id with other content is refused with 400, and the stored event is unchanged', async () => {
        const { key } = await workspaceWithKey();
        const input = { ...sampleEvent('mbx_a', 1), id: CLIENT_ID };
        const first = await server.post(EMIT, input, key);
        assertEmitted(first, 201);
        const variants: Array<[string, unknown]> = [
          ['other data', { ...input, data: { ...input.data, size_bytes: 1 } }],
          ['other subject', { ...input, subject: { ...input.subject, refs: {} } }],
          ['other type', { id: CLIENT_ID, type: 'mail.delivered', subject: input.subject, data: DATA['mail.delivered'] }],
          ['another occurred_at', { ...input, occurred_at: '2020-01-01T00:00:00.000Z' }],
          ['an occurred_at 1 ms later', { ...input, occurred_at: new Date(Date.parse(first.json.event.occurred_at) + 1).toISOString() }],
          ['a field added to data', { ...input, data: { ...input.data, spam_score: 9.5 } }],
          ['another person', { ...input, subject: { ...input.subject, person: { email: 'autre@exemple.fr' } } }],
        ];
        for (const [label, body] of variants) {
          assertError(await server.post(EMIT, body, key), 400, 'invalid_argument', new RegExp(CLIENT_ID), label);
        }
        const feed = await feedText(key);
        assert.equal(feed.json.events.length, 1);
        assert.equal(feed.text.includes(first.text.slice('{"event":'.length, -1)), true);
      });

      it('re-emitting a stored event with its own fields, as the feed returns them, answers 200 with it', async () => {
        const { ws, key } = await workspaceWithKey();
        // First emitted with a client id and no occurred_at (the server set it).
        const first = assertEmitted(await server.post(EMIT, { ...sampleEvent('mbx_a', 4), id: CLIENT_ID }, key), 201);
        const [stored] = (await feedText(key)).json.events;
        const { id, type, subject, data, occurred_at } = stored;
        for (const [label, body] of [
          ["the feed's fields", { id, type, subject, data, occurred_at }],
          ["the emit answer's fields, in another order", { occurred_at, data, subject, type, id }],
          ['occurred_at spelled with an offset', { id, type, subject, data, occurred_at: offsetSpelling(occurred_at) }],
          ['occurred_at with digits beyond the millisecond', { id, type, subject, data, occurred_at: occurred_at.replace('Z', '999Z') }],
          ['without occurred_at', { id, type, subject, data }],
        ] as Array<[string, unknown]>) {
          const retry = await server.post(EMIT, body, key);
          assertEmitted(retry, 200, label);
          assert.equal(retry.text, `{"event":${first.envelopeText}}`, label);
        }
        const counter = await server.db('feed_counters').where({ workspace_id: ws }).first();
        assert.equal(Number(counter.last_seq), 1);
      });

      it('an event first emitted without an id is found again by the id the server gave it', async () => {
        const { ws, key } = await workspaceWithKey();
        for (const occurredAt of [undefined, '2026-11-21T10:14:03.5+01:00']) {
          const input = { ...sampleEvent('mbx_a', 5), ...(occurredAt === undefined ? {} : { occurred_at: occurredAt }) };
          const first = assertEmitted(await server.post(EMIT, input, key), 201);
          const { id, occurred_at } = first.event;
          const same: Array<[string, unknown]> = [
            ['the request again, with the id', { ...input, id }],
            ['the stored fields', { id, type: input.type, subject: input.subject, data: input.data, occurred_at }],
            ['without occurred_at', { id, type: input.type, subject: input.subject, data: input.data }],
          ];
          for (const [label, body] of same) {
            const retry = await server.post(EMIT, body, key);
            assertEmitted(retry, 200, `${occurredAt} ${label}`);
            assert.equal(retry.text, `{"event":${first.envelopeText}}`, label);
          }
          const other: Array<[string, unknown]> = [
            ['other data', { ...input, id, data: { ...input.data, size_bytes: 1 } }],
            ['another occurred_at', { ...input, id, occurred_at: '2020-01-01T00:00:00Z' }],
          ];
          for (const [label, body] of other) {
            assertError(await server.post(EMIT, body, key), 400, 'invalid_argument', /already used for an event with other content/, label);
          }
        }
        const counter = await server.db('feed_counters').where({ workspace_id: ws }).first();
        assert.equal(Number(counter.last_seq), 2);
      });

      it('compares JSON values, not their spelling: escapes and 1.0 for 1 are the same event', async () => {
        const { key } = await workspaceWithKey();
        const input = { ...sampleEvent('mbx_a', 6), id: CLIENT_ID, occurred_at: '2026-11-21T09:14:03.512Z' };
        const first = assertEmitted(await server.post(EMIT, input, key), 201);
        const text = JSON.stringify(input)
          .replace('"size_bytes":1200', '"size_bytes":1200.0')
          .replace('"mail.received"', '"mail\\u002ereceived"')
          .replace('"2026-11-21T09:14:03.512Z"', '"2026-11-21 09:14:03.512z"');
        assert.notEqual(text, JSON.stringify(input));
        const retry = await server.post(EMIT, text, key);
        assertEmitted(retry, 200);
        assert.equal(retry.text, `{"event":${first.envelopeText}}`);
      });

      it('the same event re-emitted 10 times at once in different shapes: one 201, nine 200, one event', async () => {
        const { ws, key } = await workspaceWithKey();
        const input = { ...sampleEvent('mbx_a', 7), id: CLIENT_ID, occurred_at: '2026-11-21T09:14:03.512Z' };
        const shapes = [
          input,
          { ...input, occurred_at: '2026-11-21T11:14:03.512+02:00' },
          { data: input.data, subject: input.subject, type: input.type, id: CLIENT_ID },
          { ...input, occurred_at: '2026-11-21t09:14:03.5129z' },
          {
            occurred_at: input.occurred_at,
            id: CLIENT_ID,
            type: input.type,
            data: { ...input.data },
            subject: { refs: input.subject.refs, person: input.subject.person },
          },
        ];
        const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => server.post(EMIT, shapes[i % shapes.length], key)));
        const statuses = answers.map((a) => a.status).sort();
        assert.deepEqual(
          statuses,
          [200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
          answers.map((a) => `${a.status} ${a.text.slice(0, 200)}`).join('\n'),
        );
        for (const a of answers) assert.equal(a.text, answers[0]!.text);
        assert.equal(JSON.parse(answers[0]!.text).event.occurred_at, '2026-11-21T09:14:03.512Z');
        const rows = await server.db('events').where({ workspace_id: ws });
        assert.equal(rows.length, 1);
      });

      it('the same id sent 10 times at once stores one event; every answer carries it', async () => {
        const { ws, key } = await workspaceWithKey();
        const input = { ...sampleEvent('mbx_a', 3), id: CLIENT_ID };
        const answers = await Promise.all(Array.from({ length: 10 }, () => server.post(EMIT, input, key)));
        const statuses = answers.map((a) => a.status).sort();
        assert.deepEqual(
          statuses,
          [200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
          answers.map((a) => `${a.status} ${a.text.slice(0, 200)}`).join('\n'),
        );
        for (const a of answers) assert.equal(a.text, answers[0]!.text);
        assertEmitted(answers[0]!, answers[0]!.status as 200 | 201);
        const rows = await server.db('events').where({ workspace_id: ws });
        assert.equal(rows.length, 1);
        const counter = await server.db('feed_counters').where({ workspace_id: ws }).first();
        assert.equal(Number(counter.last_seq), 1);
        const feed = await feedText(key);
        assert.equal(feed.json.events.length, 1);
        assert.equal(feed.json.events[0].id, CLIENT_ID);
      });
    });

    describe('permissions', () => {
      it('refuses a key without write with 403, and no key with 401', async () => {
        for (const permissions of [['read'], ['admin'], []] as Array<Array<'read' | 'admin'>>) {
          const { key } = await workspaceWithKey(permissions);
          assertError(await server.post(EMIT, sampleEvent(), key), 403, 'forbidden', /write/, permissions.join(','));
          // whatever it sends: the body is not validated for a key that may not emit at all
          for (const body of ['{}', '{"type":"mail.opened"}', '[]', '{', '{"foo":1}']) {
            assertError(await server.post(EMIT, body, key), 403, 'forbidden', /write/, `${permissions.join(',')} ${body}`);
          }
          assertError(await server.post(EMIT, '{}', key, { 'content-type': 'text/plain' }), 403, 'forbidden', /write/, 'text/plain');
        }
        const res = await server.post(EMIT, sampleEvent());
        assertError(res, 401, 'unauthorized');
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
      });

      it('a key restricted to mailboxes emits only inside its set', async () => {
        const { ws, key } = await workspaceWithKey(['read', 'write'], ['mbx_a', 'mbx_b']);
        assertError(await server.post(EMIT, sampleEvent('mbx_c'), key), 403, 'forbidden', undefined, 'outside');
        assertError(await server.post(EMIT, sampleEvent(undefined), key), 403, 'forbidden', undefined, 'no mailbox');
        assertError(await server.post(EMIT, sampleEvent('mbx_A'), key), 403, 'forbidden', undefined, 'case differs');
        const a = assertEmitted(await server.post(EMIT, sampleEvent('mbx_a'), key), 201).event;
        const b = assertEmitted(await server.post(EMIT, sampleEvent('mbx_b', 1), key), 201).event;
        const { key: full } = await server.key(ws, ['read']);
        assert.deepEqual((await feedText(full)).json.events, [a, b]);
      });
    });
  });
}
