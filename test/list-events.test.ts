import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { PAGE_MAX_BYTES } from '../src/limits/page-bytes.ts';
import type { SearchQuery } from '../src/store/port.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { rawToolCall } from './support/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';

type Response = Awaited<ReturnType<TestServer['post']>>;
type Filters = { types?: string[]; mailbox_ids?: string[]; occurred_after?: string; occurred_before?: string };

const LIST = '/v1/list_events';
const FEED = '/v1/event_feed';
const TYPES = ['mail.received', 'mail.sent', 'mail.delivered', 'mail.deferred', 'mail.bounced', 'mail.complained', 'mail.rejected'];
const MAILBOXES = ['mbx_a', 'mbx_b', 'mbx_c', undefined];
const BASE = Date.parse('2026-03-01T00:00:00.000Z');
const N = 1100;
const iso = (ms: number) => new Date(ms).toISOString();

/** A valid `data` per type (fields from schemas/data/*.schema.json). */
const DATA: Record<string, Record<string, unknown>> = {
  'mail.received': sampleEvent().data,
  'mail.sent': {
    internet_message_id: '<s1@mail.boutique.fr>',
    from: { email: 'contact@boutique.fr' },
    to: [{ email: 'claire@exemple.fr' }],
    bcc_count: 0,
    subject_line: 'Re: commande',
    size_bytes: 1287,
    attachment_count: 0,
  },
  'mail.delivered': {
    internet_message_id: '<s1@mail.boutique.fr>',
    recipient: 'claire@exemple.fr',
    remote_mta: 'mx1.mail.ovh.net',
    smtp_response: '250 2.0.0 Ok',
    delivery_ms: 1575,
    attempt: 1,
  },
  'mail.deferred': {
    internet_message_id: '<s2@mail.boutique.fr>',
    recipient: 'marc@orange.fr',
    smtp_code: 421,
    enhanced_status: '4.7.0',
    diagnostic: '421 4.7.0 try later',
    remote_mta: 'smtp-in.orange.fr',
    attempt: 2,
    next_attempt_at: '2026-11-21T09:45:40.000Z',
  },
  'mail.bounced': {
    internet_message_id: '<s3@mail.boutique.fr>',
    recipient: 'p.martin@laposte.net',
    bounce_type: 'hard',
    bounce_category: 'unknown_user',
    smtp_code: 550,
    enhanced_status: '5.1.1',
    diagnostic: '550 5.1.1 user unknown',
    remote_mta: 'smtpz4.laposte.net',
  },
  'mail.complained': { internet_message_id: '<s4@mail.boutique.fr>', recipient: 'sophie@yahoo.fr', feedback_type: 'abuse' },
  'mail.rejected': {
    stage: 'inbound',
    reason: 'spam',
    smtp_code: 554,
    diagnostic: '554 5.7.1 spam',
    from: { email: 'promo@offres.biz' },
    recipient: 'contact@boutique.fr',
    internet_message_id: '<r1@offres.biz>',
  },
};

/** Event i of the shared workspace: mixed types and mailboxes; occurred_at mostly rising, every 10th backfilled. */
function eventInput(i: number) {
  const type = i % 13 === 0 ? 'mail.bounced' : TYPES[(i * 3 + (i >> 4)) % 7]!;
  const mailbox = MAILBOXES[(i * 7 + (i >> 3)) % 4];
  let occurred = i % 10 === 9 ? BASE - (i + 1) * 3_600_000 : BASE + i * 60_000;
  if (i === 500) occurred += 123; // 08:20:00.123Z, for sub-millisecond bounds
  if (i >= 600 && i <= 604) occurred = BASE + 600 * 60_000; // ties
  return {
    type,
    subject: { person: { email: `client${i}@exemple.fr` }, refs: mailbox ? { mailbox_id: mailbox } : {} },
    data: DATA[type],
    occurred_at: iso(occurred),
  };
}

/** The model: does an envelope match these filters, for a key with this scope? */
function matches(e: any, f: Filters, scope: string[] | null = null): boolean {
  const mailbox: string | undefined = e.subject.refs.mailbox_id;
  if (scope && (mailbox === undefined || !scope.includes(mailbox))) return false;
  if (f.types && !f.types.some((t) => (t.endsWith('.*') ? e.type.startsWith(t.slice(0, -1)) : e.type === t))) return false;
  if (f.mailbox_ids && (mailbox === undefined || !f.mailbox_ids.includes(mailbox))) return false;
  const at = Date.parse(e.occurred_at);
  if (f.occurred_after && at < Date.parse(f.occurred_after)) return false;
  if (f.occurred_before && at >= Date.parse(f.occurred_before)) return false;
  return true;
}

function assertPage(res: Response, label = ''): { events: any[]; next_page_token: string | null } {
  assert.equal(res.status, 200, `${label} ${res.text.slice(0, 300)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(res.json), ['events', 'next_page_token'], label);
  assert.equal(contractErrors('ListEventsResponse', res.json), null, label);
  return res.json;
}

function assertError(res: Response, status: number, code: string, pattern?: RegExp, label = ''): string {
  const where = `${label} → ${res.status} ${res.text.slice(0, 300)}`;
  assert.equal(res.status, status, where);
  assert.equal(contractErrors('Error', res.json), null, where);
  assert.deepEqual(Object.keys(res.json.error), ['code', 'message'], where);
  assert.equal(res.json.error.code, code, where);
  if (pattern) assert.match(res.json.error.message, pattern, where);
  return res.json.error.message;
}

const ids = (events: any[]) => events.map((e) => e.id);

/** Mulberry32: a small seeded generator, so a failure can be replayed. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`POST /v1/list_events on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let ws: string;
    let readKey: string;
    let all: any[]; // envelopes in emission order
    let otherKey: string; // read key of a second workspace

    /** Pages through with `limit` until next_page_token is null; checks every page. */
    async function listAll(key: string, filters: Filters, limit?: number) {
      const events: any[] = [];
      let token: string | undefined;
      for (let i = 0; i < 3000; i++) {
        const body: Record<string, unknown> = { ...filters };
        if (limit !== undefined) body.limit = limit;
        if (token !== undefined) body.page_token = token;
        const page = assertPage(await server.post(LIST, body, key), `${JSON.stringify(filters)} limit ${limit}`);
        events.push(...page.events);
        if (page.next_page_token === null) {
          assert.ok(page.events.length <= (limit ?? 100));
          return events;
        }
        assert.equal(page.events.length, limit ?? 100, 'a page followed by a token is full');
        token = page.next_page_token;
      }
      throw new Error('listing did not end');
    }

    /** event_feed, read to the end: the emission order. */
    async function feedAll(key: string) {
      const events: any[] = [];
      let after: string | undefined;
      for (;;) {
        const page = (await server.post(FEED, after === undefined ? { limit: 500 } : { after, limit: 500 }, key)).json;
        if (page.events.length === 0) return events;
        events.push(...page.events);
        after = page.next_cursor;
      }
    }

    before(async () => {
      server = await startTestServer(await create());
      ws = await server.workspace();
      readKey = (await server.key(ws, ['read'])).key;
      const inputs = Array.from({ length: N }, (_, i) => eventInput(i));
      all = [];
      for (let i = 0; i < N; i += 400) {
        const published = await server.db.transaction((trx) => publish(trx, ws, inputs.slice(i, i + 400)));
        all.push(...published.map((p) => JSON.parse(p.envelope)));
      }
      const other = await server.workspace();
      otherKey = (await server.key(other, ['read'])).key;
      await server.db.transaction((trx) =>
        publish(trx, other, [sampleEvent('mbx_a', 1), sampleEvent('mbx_a', 2), sampleEvent('mbx_b', 3)]),
      );
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    describe('ordering and paging', () => {
      it('{} (and no body) gives the 100 newest, newest first, spliced byte for byte from the stored envelopes', async () => {
        const res = await server.post(LIST, {}, readKey);
        const page = assertPage(res);
        assert.deepEqual(page.events, all.slice(-100).reverse());
        assert.equal(typeof page.next_page_token, 'string');
        const stored: Array<{ envelope: string }> = await server
          .db('events')
          .select('envelope')
          .where('workspace_id', ws)
          .orderBy('seq', 'desc')
          .limit(100);
        assert.equal(
          res.text,
          `{"events":[${stored.map((r) => r.envelope).join(',')}],"next_page_token":${JSON.stringify(page.next_page_token)}}`,
        );
        assert.equal((await server.post(LIST, undefined, readKey)).text, res.text);
        assert.equal((await server.post(LIST, '', readKey)).text, res.text);
        assert.equal((await server.post(LIST, {}, readKey)).text, res.text, 'deterministic, token included');
      });

      it('paging with limits 1, 7, 100, 500 gives exactly the reverse of event_feed', async () => {
        const feed = await feedAll(readKey);
        assert.equal(feed.length, N);
        for (const limit of [7, 100, 500, undefined]) {
          assert.deepEqual(await listAll(readKey, {}, limit), [...feed].reverse(), `limit ${limit}`);
        }
        // limit 1 over a smaller selection
        const f: Filters = { types: ['mail.bounced'], mailbox_ids: ['mbx_a', 'mbx_c'] };
        assert.deepEqual(await listAll(readKey, f, 1), feed.filter((e) => matches(e, f)).reverse());
      });

      it('an empty workspace or an empty selection: no events, next_page_token null', async () => {
        const empty = await server.workspace();
        const { key } = await server.key(empty, ['read']);
        assert.equal((await server.post(LIST, {}, key)).text, '{"events":[],"next_page_token":null}');
        assert.deepEqual(assertPage(await server.post(LIST, { mailbox_ids: ['mbx_nobody'] }, readKey)), {
          events: [],
          next_page_token: null,
        });
        const at = '2026-03-01T00:00:00Z';
        assert.deepEqual(assertPage(await server.post(LIST, { occurred_after: at, occurred_before: at }, readKey)).events, []);
      });

      it('exactly `limit` matches left: the page is full and next_page_token is null', async () => {
        const f: Filters = { types: ['mail.bounced'] };
        const expected = all.filter((e) => matches(e, f)).reverse();
        const page = assertPage(await server.post(LIST, { ...f, limit: expected.length }, readKey));
        assert.deepEqual(page, { events: expected, next_page_token: null });
        const short = assertPage(await server.post(LIST, { ...f, limit: expected.length - 1 }, readKey));
        assert.equal(short.events.length, expected.length - 1);
        const last = assertPage(await server.post(LIST, { ...f, limit: 500, page_token: short.next_page_token }, readKey));
        assert.deepEqual(last, { events: expected.slice(-1), next_page_token: null });
      });

      it('events emitted between pages appear on no later page (older pages stay stable)', async () => {
        const w = await server.workspace();
        const { key } = await server.key(w, ['read']);
        const first = await server.db.transaction((trx) =>
          publish(
            trx,
            w,
            Array.from({ length: 6 }, (_, i) => sampleEvent('mbx_a', i)),
          ),
        );
        const p1 = assertPage(await server.post(LIST, { limit: 3 }, key));
        await server.db.transaction((trx) => publish(trx, w, [sampleEvent('mbx_a', 99)]));
        const p2 = assertPage(await server.post(LIST, { limit: 3, page_token: p1.next_page_token }, key));
        const emitted = first.map((p) => JSON.parse(p.envelope));
        assert.deepEqual([...p1.events, ...p2.events], emitted.reverse());
        assert.equal(p2.next_page_token, null);
      });
    });

    describe('filters', () => {
      const T0 = iso(BASE + 100 * 60_000);
      const T1 = iso(BASE + 220 * 60_000);
      const cases: Array<[string, Filters]> = [
        ['one type', { types: ['mail.bounced'] }],
        ['two types', { types: ['mail.sent', 'mail.complained'] }],
        ['prefix mail.*', { types: ['mail.*'] }],
        ['prefix and a type', { types: ['mail.*', 'mail.sent'] }],
        ['one mailbox', { mailbox_ids: ['mbx_a'] }],
        ['two mailboxes, one unknown', { mailbox_ids: ['mbx_c', 'mbx_zz'] }],
        ['40 mailboxes (one scan)', { mailbox_ids: ['mbx_b', ...Array.from({ length: 39 }, (_, i) => `mbx_x${i}`)] }],
        ['occurred_after (wide)', { occurred_after: iso(BASE - 400 * 3_600_000) }],
        ['occurred_after (recent)', { occurred_after: iso(BASE + 1000 * 60_000) }],
        ['occurred_before (backfilled only)', { occurred_before: iso(BASE) }],
        ['occurred_before (most)', { occurred_before: iso(BASE + 900 * 60_000) }],
        ['narrow window', { occurred_after: T0, occurred_before: T1 }],
        [
          'wide window + types',
          {
            occurred_after: iso(BASE - 2000 * 3_600_000),
            occurred_before: iso(BASE + 5000 * 60_000),
            types: ['mail.deferred', 'mail.bounced'],
          },
        ],
        ['wide window + mailboxes', { occurred_after: iso(BASE - 2000 * 3_600_000), mailbox_ids: ['mbx_a', 'mbx_b'] }],
        [
          'narrow window + type + mailbox',
          { occurred_after: T0, occurred_before: T1, types: ['mail.received', 'mail.sent'], mailbox_ids: ['mbx_b'] },
        ],
        ['type + mailboxes', { types: ['mail.delivered'], mailbox_ids: ['mbx_a', 'mbx_b', 'mbx_c'] }],
        [
          'everything',
          {
            types: ['mail.bounced', 'mail.rejected'],
            mailbox_ids: ['mbx_c'],
            occurred_after: iso(BASE - 500 * 3_600_000),
            occurred_before: iso(BASE + 800 * 60_000),
          },
        ],
      ];
      for (const [label, f] of cases) {
        it(`${label}: the matching events of event_feed, reversed, with any limit`, async () => {
          const expected = all.filter((e) => matches(e, f)).reverse();
          assert.ok(expected.length > 0 || label.includes('unknown'), `${label} selects something`);
          const limits = [7, 100, 500].filter((l) => expected.length / l < 40);
          for (const limit of limits) assert.deepEqual(ids(await listAll(readKey, f, limit)), ids(expected), `${label} limit ${limit}`);
          assert.deepEqual(await listAll(readKey, f, 500), expected);
        });
      }

      it('mail.* selects every event; types may repeat through a prefix', async () => {
        const page = assertPage(await server.post(LIST, { types: ['mail.*'], limit: 500 }, readKey));
        assert.deepEqual(page.events, all.slice(-500).reverse());
      });

      it('occurred_after is inclusive and occurred_before exclusive, to the millisecond and below', async () => {
        const exact = all[500]; // occurred at 08:20:00.123Z
        assert.equal(exact.occurred_at, '2026-03-01T08:20:00.123Z');
        const window = async (f: Filters) => ids(assertPage(await server.post(LIST, { ...f, limit: 500 }, readKey)).events);
        assert.deepEqual(await window({ occurred_after: '2026-03-01T08:20:00.123Z', occurred_before: '2026-03-01T08:20:00.124Z' }), [
          exact.id,
        ]);
        assert.deepEqual(
          await window({ occurred_after: '2026-03-01T08:20:00.1229999Z', occurred_before: '2026-03-01T08:20:00.1230001Z' }),
          [exact.id],
        );
        assert.deepEqual(await window({ occurred_after: '2026-03-01T08:20:00.1230001Z', occurred_before: '2026-03-01T08:21:00Z' }), []);
        assert.deepEqual(await window({ occurred_after: '2026-03-01T08:20:00Z', occurred_before: '2026-03-01T08:20:00.123Z' }), []);
        assert.deepEqual(await window({ occurred_after: '2026-03-01T08:20:00Z', occurred_before: '2026-03-01T08:20:00.12300001Z' }), [
          exact.id,
        ]);
        const ties = all
          .slice(600, 605)
          .map((e) => e.id)
          .reverse();
        assert.deepEqual(await window({ occurred_after: iso(BASE + 600 * 60_000), occurred_before: iso(BASE + 600 * 60_000 + 1) }), ties);
      });

      it('any RFC 3339 spelling of the same instant selects the same events', async () => {
        const spellings = [
          '2026-03-01T02:00:00Z',
          '2026-03-01t02:00:00z',
          '2026-03-01 02:00:00Z',
          '2026-03-01T03:00:00+01:00',
          '2026-03-01T03:00:00+0100',
          '2026-03-01T03:00:00+01',
          '2026-02-28T23:30:00-02:30',
          '2026-03-01T02:00:00.000000000Z',
          '2026-03-01T02:00:00-00:00',
        ];
        const texts = new Set<string>();
        for (const s of spellings) {
          const res = await server.post(LIST, { occurred_after: s, occurred_before: '2026-03-01T04:00:00Z', limit: 500 }, readKey);
          assert.deepEqual(
            ids(assertPage(res, s).events),
            ids(
              all.filter((e) => matches(e, { occurred_after: '2026-03-01T02:00:00Z', occurred_before: '2026-03-01T04:00:00Z' })).reverse(),
            ),
            s,
          );
          texts.add(res.text);
        }
        assert.equal(texts.size, 1, 'same events, same token');
      });

      it('refuses impossible or contradictory times with 400, never 500', async () => {
        const cases: Array<[Record<string, unknown>, RegExp]> = [
          [
            { occurred_after: '2026-03-02T00:00:00Z', occurred_before: '2026-03-01T00:00:00Z' },
            /occurred_after must not be later than occurred_before/,
          ],
          [
            { occurred_after: '2026-03-01T00:00:00.0002Z', occurred_before: '2026-03-01T00:00:00.0001Z' },
            /occurred_after must not be later/,
          ],
          [{ occurred_after: '2016-12-31T23:59:60Z' }, /occurred_after "2016-12-31T23:59:60Z" is not a representable UTC date-time/],
          [{ occurred_before: '2017-01-01T00:59:60+01:00' }, /occurred_before .* leap second/],
          [{ occurred_after: '2026-02-30T00:00:00Z' }, /occurred_after must be a valid date-time/],
          [{ occurred_after: '2026-03-01T24:00:00Z' }, /occurred_after must be a valid date-time/],
          [{ occurred_before: '2026-03-01T00:00:00' }, /occurred_before must be a valid date-time/],
          [{ occurred_before: '2026-03-01' }, /occurred_before must be a valid date-time/],
          [{ occurred_before: '2026-03-01T00:00:00+24:00' }, /occurred_before must be a valid date-time/],
          [{ occurred_before: `2026-03-01T00:00:00.${'1'.repeat(20)}Z` }, /occurred_before/],
        ];
        for (const [body, pattern] of cases)
          assertError(await server.post(LIST, body, readKey), 400, 'invalid_argument', pattern, JSON.stringify(body));
        // Extreme but valid: year 0000 and 9999 with offsets.
        assert.equal(
          assertPage(
            await server.post(
              LIST,
              { occurred_after: '0000-01-01T00:00:00+23:59', occurred_before: '9999-12-31T23:59:59.999-23:59', limit: 1 },
              readKey,
            ),
          ).events.length,
          1,
        );
      });
    });

    describe('page tokens', () => {
      it('are bound to the filters, not to limit; equivalent spellings continue', async () => {
        const f: Filters = { types: ['mail.sent', 'mail.bounced'], occurred_after: '2026-03-01T00:00:00Z' };
        const p1 = assertPage(await server.post(LIST, { ...f, limit: 5 }, readKey));
        const expected = all.filter((e) => matches(e, f)).reverse();
        const p2 = assertPage(await server.post(LIST, { ...f, limit: 9, page_token: p1.next_page_token }, readKey));
        assert.deepEqual(ids([...p1.events, ...p2.events]), ids(expected.slice(0, 14)));
        const same = {
          types: ['mail.bounced', 'mail.sent'],
          occurred_after: '2026-03-01T01:00:00+01:00',
          limit: 9,
          page_token: p1.next_page_token,
        };
        assert.deepEqual(assertPage(await server.post(LIST, same, readKey)), p2);

        for (const other of [
          { types: ['mail.sent'], occurred_after: f.occurred_after },
          { types: f.types },
          { ...f, occurred_before: '2027-01-01T00:00:00Z' },
          { ...f, mailbox_ids: ['mbx_a'] },
          { ...f, occurred_after: '2026-03-01T00:00:00.001Z' },
        ]) {
          assertError(
            await server.post(LIST, { ...other, page_token: p1.next_page_token }, readKey),
            400,
            'invalid_argument',
            /page_token was issued for other filters/,
            JSON.stringify(other),
          );
        }
      });

      it('a mail.* prefix is the same filter as no type filter', async () => {
        const p1 = assertPage(await server.post(LIST, { types: ['mail.*'], limit: 3 }, readKey));
        const p2 = assertPage(await server.post(LIST, { limit: 3, page_token: p1.next_page_token }, readKey));
        assert.deepEqual(ids([...p1.events, ...p2.events]), ids(all.slice(-6).reverse()));
      });

      it('refuses a tampered, truncated, foreign or misplaced token with a clear 400', async () => {
        const token = assertPage(await server.post(LIST, { limit: 2 }, readKey)).next_page_token!;
        const foreign = assertPage(await server.post(LIST, { limit: 1 }, otherKey)).next_page_token!;
        const cursor = (await server.post(FEED, { limit: 2 }, readKey)).json.next_cursor;
        const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
        const cases: Array<[string, RegExp]> = [
          [flip(token, 3), /altered/],
          [flip(token, 20), /altered/],
          [flip(token, token.length - 2), /altered|malformed/],
          [token.slice(0, -1), /malformed or truncated/],
          [token.slice(0, -4), /malformed or truncated/],
          [`${token}A`, /malformed or truncated/],
          [`${token}=`, /malformed or truncated/],
          [token.toLowerCase(), /altered|malformed|version/],
          ['garbage', /malformed or truncated/],
          [cursor, /malformed or truncated/],
          [foreign, /another workspace/],
          [`Aw${token.slice(2)}`, /its version is not supported/], // version byte 3
        ];
        for (const [value, pattern] of cases) {
          assertError(await server.post(LIST, { limit: 2, page_token: value }, readKey), 400, 'invalid_argument', pattern, value);
        }
        // and the event_feed cursor does not accept a page token
        assertError(await server.post(FEED, { after: token }, readKey), 400, 'invalid_argument', /after is not a valid cursor/);
      });
    });

    describe('scoping and permissions', () => {
      it('a restricted key sees only its mailboxes, and may narrow within them', async () => {
        const scope = ['mbx_a', 'mbx_b'];
        const { key } = await server.key(ws, ['read'], scope);
        assert.deepEqual(ids(await listAll(key, {}, 100)), ids(all.filter((e) => matches(e, {}, scope)).reverse()));
        const f: Filters = { mailbox_ids: ['mbx_b'], types: ['mail.received', 'mail.bounced'] };
        assert.deepEqual(ids(await listAll(key, f, 13)), ids(all.filter((e) => matches(e, f, scope)).reverse()));
        const w: Filters = { occurred_after: iso(BASE + 100 * 60_000), occurred_before: iso(BASE + 300 * 60_000) };
        assert.deepEqual(ids(await listAll(key, w, 10)), ids(all.filter((e) => matches(e, w, scope)).reverse()));
        // an unrestricted key's token with the same filters still only yields the restricted key's events
        const token = assertPage(await server.post(LIST, { limit: 10 }, readKey)).next_page_token;
        const page = assertPage(await server.post(LIST, { limit: 500, page_token: token }, key));
        assert.ok(page.events.every((e) => scope.includes(e.subject.refs.mailbox_id)));
      });

      it('asking for a mailbox outside the scope is 403 forbidden, naming it', async () => {
        const { key } = await server.key(ws, ['read'], ['mbx_a', 'mbx_b']);
        for (const mailbox_ids of [['mbx_c'], ['mbx_a', 'mbx_c'], ['mbx_zz', 'mbx_a']]) {
          const outside = mailbox_ids.find((m) => m !== 'mbx_a' && m !== 'mbx_b')!;
          const message = assertError(
            await server.post(LIST, { mailbox_ids }, key),
            403,
            'forbidden',
            undefined,
            JSON.stringify(mailbox_ids),
          );
          assert.ok(message.includes(`"${outside}"`), message);
        }
        const none = await server.key(ws, ['read'], []);
        assert.deepEqual(assertPage(await server.post(LIST, {}, none.key)), { events: [], next_page_token: null });
        assertError(await server.post(LIST, { mailbox_ids: ['mbx_a'] }, none.key), 403, 'forbidden', /"mbx_a"/);
      });

      it('needs the read permission and a key', async () => {
        const writer = (await server.key(ws, ['write'])).key;
        assertError(await server.post(LIST, {}, writer), 403, 'forbidden', /lacks the "read" permission/);
        assertError(await server.post(LIST, {}), 401, 'unauthorized');
      });
    });

    describe('parameters', () => {
      it('refuses unknown parameters, naming them', async () => {
        for (const name of ['foo', 'after', 'cursor', 'Types', 'mailbox_id', 'type', 'page_size']) {
          const message = assertError(await server.post(LIST, { [name]: 1 }, readKey), 400, 'invalid_argument', undefined, name);
          assert.ok(message.includes(`"${name}"`), `${name}: ${message}`);
        }
      });

      it('limit is an integer from 1 to 500, 100 by default', async () => {
        for (const limit of ['0', '501', '-1', '1.5', '"10"', 'null', 'true', '1e400']) {
          assertError(
            await server.post(LIST, `{"limit":${limit}}`, readKey),
            400,
            'invalid_argument',
            /^limit must be an integer between 1 and 500$/,
            limit,
          );
        }
        assert.equal(assertPage(await server.post(LIST, { limit: 1 }, readKey)).events.length, 1);
        assert.equal(assertPage(await server.post(LIST, { limit: 500 }, readKey)).events.length, 500);
        assert.equal(assertPage(await server.post(LIST, '{"limit":5e2}', readKey)).events.length, 500);
        assert.equal(assertPage(await server.post(LIST, {}, readKey)).events.length, 100);
      });

      it('refuses malformed types and mailbox ids', async () => {
        for (const body of [
          { types: [] },
          { types: ['mail.unknown'] },
          { types: ['mail.bounced', 'mail.bounced'] },
          { types: 'mail.bounced' },
          { types: ['*'] },
          { mailbox_ids: [] },
          { mailbox_ids: ['inbox'] },
          { mailbox_ids: Array.from({ length: 101 }, (_, i) => `mbx_${i}`) },
          { page_token: '' },
        ]) {
          assertError(await server.post(LIST, body, readKey), 400, 'invalid_argument', undefined, JSON.stringify(body).slice(0, 80));
        }
      });
    });

    describe('the query (store/common/event-search.ts) against a model', () => {
      it('gives the model answer for random filters, scopes and page sizes, page by page', async () => {
        const rows: Array<{ seq: number; id: string; type: string; mailbox_id: string | null; occurred_at_ms: number }> = await server
          .db('events')
          .select('seq', 'id', 'type', 'mailbox_id', 'occurred_at_ms')
          .where('workspace_id', ws)
          .orderBy('seq', 'desc');
        const rand = random(kind === 'sqlite' ? 7 : 11);
        const pick = <T>(values: readonly T[]) => values[Math.floor(rand() * values.length)]!;
        const subset = <T>(values: readonly T[]) => values.filter(() => rand() < 0.4);
        const times = [
          BASE - 1200 * 3_600_000,
          BASE - 50 * 3_600_000,
          BASE,
          BASE + 100 * 60_000,
          BASE + 130 * 60_000,
          BASE + 600 * 60_000,
          BASE + 2000 * 60_000,
        ];
        for (let round = 0; round < 80; round++) {
          const types = rand() < 0.5 ? null : subset(TYPES).sort();
          const mailboxes =
            rand() < 0.4
              ? null
              : rand() < 0.1
                ? ['mbx_a', ...Array.from({ length: 35 }, (_, i) => `mbx_y${i}`)]
                : subset(['mbx_a', 'mbx_b', 'mbx_c', 'mbx_d']);
          let from = rand() < 0.5 ? null : pick(times) + Math.floor(rand() * 3) * 60_000;
          let until = rand() < 0.5 ? null : pick(times) + Math.floor(rand() * 90) * 60_000;
          if (from !== null && until !== null && from > until) [from, until] = [until, from];
          const limit = pick([5, 20, 64, 200]);
          const expected = rows
            .filter((r) => types === null || types.includes(r.type))
            .filter((r) => mailboxes === null || (r.mailbox_id !== null && mailboxes.includes(r.mailbox_id)))
            .filter((r) => (from === null || r.occurred_at_ms >= from) && (until === null || r.occurred_at_ms < until))
            .map((r) => r.id);
          const got: string[] = [];
          let beforeSeq: number | null = null;
          for (let calls = 0; ; calls++) {
            assert.ok(calls < 1000, 'the listing ends');
            const q: SearchQuery = {
              workspaceId: ws,
              types,
              mailboxes,
              occurredFromMs: from,
              occurredBeforeMs: until,
              beforeSeq,
              limit,
              maxBytes: PAGE_MAX_BYTES,
            };
            const page = await server.store.searchEvents(q);
            const events = JSON.parse(`[${page.bytes.toString('utf8')}]`) as Array<{ id: string; type: string; occurred_at: string }>;
            assert.equal(page.count, events.length);
            assert.deepEqual(
              page.types,
              events.map((e) => e.type),
              'facts: types in page order',
            );
            assert.deepEqual(
              page.occurredAtMs,
              events.map((e) => Date.parse(e.occurred_at)),
              'facts: times in page order',
            );
            got.push(...events.map((e) => e.id));
            if (page.continueBelow === null) break;
            beforeSeq = page.continueBelow;
          }
          assert.deepEqual(got, expected, `round ${round}: ${JSON.stringify({ types, mailboxes, from, until, limit })}`);
        }
      });
    });

    describe('MCP', () => {
      it('tools/call list_events answers the HTTP object and French text', async () => {
        const steps: Array<Record<string, unknown>> = [{ types: ['mail.bounced'], limit: 40 }];
        for (let i = 0; i < 6; i++) {
          const args = steps.at(-1)!;
          const http = await server.post(LIST, args, readKey);
          const mcp = (await rawToolCall(server.url, readKey, 'list_events', JSON.stringify(args))).body.result;
          assert.notEqual(mcp.isError, true, JSON.stringify(mcp));
          assert.deepEqual(mcp.structuredContent, http.json);
          const text: string = mcp.content[0].text;
          const { events, next_page_token } = http.json;
          if (events.length === 0) {
            assert.match(text, /^Aucun événement/);
            break;
          }
          assert.match(
            text,
            new RegExp(`^${events.length} événements? \\(types : mail\\.bounced\\)(, du plus récent au plus ancien)?\\.\n`),
          );
          assert.match(text, /mail\.bounced \(message rejeté par le destinataire \(rebond\)\) : \d+/);
          assert.match(text, /^(Le plus récent est survenu le .*, le plus ancien le .*|(Tous survenus|Survenu) le .*) \(UTC\)\.$/m);
          if (next_page_token) {
            assert.ok(text.includes(`page_token = ${next_page_token}`), text);
            assert.match(text, /mêmes filtres/);
            steps.push({ types: ['mail.bounced'], limit: 40, page_token: next_page_token });
          } else {
            assert.match(text, /Il n’y a pas d’événement plus ancien/);
            break;
          }
        }
        assert.ok(steps.length > 2, 'several pages were read');
        const empty = (await rawToolCall(server.url, readKey, 'list_events', '{"mailbox_ids":["mbx_nobody"]}')).body.result;
        assert.equal(empty.content[0].text, 'Aucun événement ne correspond aux filtres (boîte : mbx_nobody).');
      });

      it('gives the same verdict and message as HTTP over a corpus of argument sets', async () => {
        const token = assertPage(await server.post(LIST, { limit: 3 }, readKey)).next_page_token!;
        const typedToken = assertPage(await server.post(LIST, { types: ['mail.bounced'], limit: 3 }, readKey)).next_page_token!;
        const foreign = assertPage(await server.post(LIST, { limit: 1 }, otherKey)).next_page_token!;
        const dates = [
          '"2026-03-01T00:00:00Z"',
          '"2026-03-01t00:00:00z"',
          '"2026-03-01T01:00:00+01:00"',
          '"2026-03-01T01:00:00+0100"',
          '"2026-03-01T01:00:00+01"',
          '"2026-03-01 00:00:00Z"',
          '"2026-03-01\\t00:00:00Z"',
          '"2026-03-01\\u00a000:00:00Z"',
          '"2016-12-31T23:59:60Z"',
          '"2016-12-31T23:59:60.5Z"',
          '"2017-01-01T00:59:60+01:00"',
          '"2026-03-01T23:59:60Z"',
          '"2026-02-30T00:00:00Z"',
          '"2024-02-29T12:00:00Z"',
          '"2026-03-01T00:00:00.123456789Z"',
          '"2026-03-01T00:00:00.Z"',
          '"2026-03-01T00:00:00,5Z"',
          '"2026-03-01T00:00:00"',
          '"2026-03-01"',
          '"2026-03-01T24:00:00Z"',
          '"0000-01-01T00:00:00Z"',
          '"9999-12-31T23:59:59.999-23:59"',
          '"2026-03-01T00:00:00+24:00"',
          '"20260301T000000Z"',
          '"2026-03-01TT00:00:00Z"',
          '"２０２６-03-01T00:00:00Z"',
          `"${'2'.repeat(36)}"`,
          '""',
          '123',
          'null',
        ];
        const types = [
          '["mail.bounced"]',
          '["mail.*"]',
          '["mail.sent","mail.bounced"]',
          '[]',
          '["mail.unknown"]',
          '["*"]',
          '["MAIL.BOUNCED"]',
          '"mail.bounced"',
          '[1]',
          '["mail.*.*"]',
          '["other.*"]',
        ];
        const mailboxes = [
          '["mbx_a"]',
          '["mbx_a","mbx_b"]',
          '["mbx_zz"]',
          '[]',
          '["mbx_"]',
          '["inbox"]',
          JSON.stringify(Array.from({ length: 101 }, (_, i) => `mbx_${i}`)),
          '"mbx_a"',
        ];
        const tokens = [
          token,
          typedToken,
          foreign,
          token.slice(0, -3),
          `${token.slice(0, 5)}${token[5] === 'A' ? 'B' : 'A'}${token.slice(6)}`,
          'x',
          '',
          'x'.repeat(1025),
        ].map((t) => JSON.stringify(t));
        const limits = ['1', '100', '500', '0', '501', '1.5', '"5"', 'null', '5e1'];
        const extras = ['"foo":1', '"__proto__":{}', '"Types":["mail.bounced"]', '"after":"x"', '"":1'];
        const corpus = ['{}'];
        for (const d of dates) corpus.push(`{"occurred_after":${d}}`, `{"occurred_before":${d},"limit":3}`);
        for (const t of types) corpus.push(`{"types":${t},"limit":2}`);
        for (const m of mailboxes) corpus.push(`{"mailbox_ids":${m},"limit":2}`);
        for (const t of tokens) corpus.push(`{"page_token":${t},"limit":2}`, `{"types":["mail.bounced"],"page_token":${t},"limit":2}`);
        for (const l of limits) corpus.push(`{"limit":${l}}`);
        for (const e of extras) corpus.push(`{${e}}`, `{"limit":2,${e}}`);
        corpus.push(
          '{"occurred_after":"2026-03-02T00:00:00Z","occurred_before":"2026-03-01T00:00:00Z"}',
          '{"occurred_after":"2026-03-01T00:00:00Z","occurred_before":"2026-03-01T00:00:00Z"}',
          '{"occurred_after":"2026-03-01T01:00:00+01:00","occurred_before":"2026-03-01T00:30:00Z","types":["mail.*"]}',
          '{"limit":5,"limit":6}',
          '{"types":["mail.sent"],"mailbox_ids":["mbx_b"],"occurred_after":"2026-03-01T00:00:00Z","limit":4}',
        );
        assert.ok(corpus.length >= 100, `corpus has ${corpus.length} cases`);

        const scoped = (await server.key(ws, ['read'], ['mbx_a'])).key;
        let valid = 0;
        for (const key of [readKey, scoped]) {
          for (const args of corpus) {
            const http = await server.post(LIST, args, key);
            const mcp = await rawToolCall(server.url, key, 'list_events', args);
            assert.equal(mcp.status, 200, args);
            const result = mcp.body.result;
            assert.ok(result, `${args}: ${JSON.stringify(mcp.body)}`);
            assert.notEqual(http.status, 500, `${args}: ${http.text}`);
            if (http.status === 200) {
              valid++;
              assertPage(http, args);
              assert.notEqual(result.isError, true, `${args}: HTTP accepted, MCP refused: ${result.content?.[0]?.text}`);
              assert.deepEqual(result.structuredContent, http.json, args);
              assert.match(result.content[0].text, /^(Aucun événement|\d+ événements?[ .,])/, args);
            } else {
              assert.equal(result.isError, true, `${args}: HTTP refused (${http.text}), MCP accepted`);
              assert.deepEqual(result._meta['event-feed/error'], http.json.error, args);
              assert.equal(result.content[0].text, `${http.json.error.code} : ${http.json.error.message}`);
            }
          }
        }
        assert.ok(valid > 40 && valid < corpus.length * 2 - 60, `a mix of valid (${valid}) and invalid cases`);
      });

      // Ajv names the duplicate pair in an order that depends on how the schema was compiled;
      // validation-errors.ts puts it in a fixed order.
      it('duplicate items: same message on both transports', async () => {
        for (const args of ['{"types":["mail.bounced","mail.bounced"]}', '{"mailbox_ids":["mbx_a","mbx_a"]}']) {
          const http = await server.post(LIST, args, readKey);
          const mcp = (await rawToolCall(server.url, readKey, 'list_events', args)).body.result;
          assert.equal(http.status, 400);
          assert.equal(mcp.content[0].text, `${http.json.error.code} : ${http.json.error.message}`, args);
        }
      });
    });
  });
}
