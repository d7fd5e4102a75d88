import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { publish } from '../src/library.ts';
import { databaseKinds } from './support/databases.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { startTestServer, type TestServer } from './support/server.ts';

type Response = Awaited<ReturnType<TestServer['post']>>;

const FEED = '/v1/event_feed';
const REQUEST_ID = /^req_[A-Za-z0-9_-]{12}$/;

/** A 200 page: exact shape, contract-valid, common headers. */
function assertPage(res: Response, label = ''): { events: any[]; next_cursor: string } {
  assert.equal(res.status, 200, `${label} ${res.text.slice(0, 300)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(res.json), ['events', 'next_cursor'], label);
  assert.equal(contractErrors('EventFeedResponse', res.json), null, label);
  assertCommonHeaders(res, label);
  return res.json;
}

/** An error: exact status and code, body exactly {error:{code,message}}, contract-valid. */
function assertError(res: Response, status: number, code: string, messagePattern?: RegExp, label = ''): string {
  const where = `${label} → ${res.status} ${res.text.slice(0, 300)}`;
  assert.equal(res.status, status, where);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, where);
  assert.equal(contractErrors('Error', res.json), null, where);
  assert.deepEqual(Object.keys(res.json), ['error'], where);
  assert.deepEqual(Object.keys(res.json.error), ['code', 'message'], where);
  assert.equal(res.json.error.code, code, where);
  assert.ok(res.json.error.message.length > 0, where);
  if (messagePattern) assert.match(res.json.error.message, messagePattern, where);
  assertCommonHeaders(res, label);
  if (status === 401) assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/, `${where}: WWW-Authenticate`);
  return res.json.error.message;
}

function assertCommonHeaders(res: { headers: Headers }, label = '') {
  assert.match(res.headers.get('x-request-id') ?? '', REQUEST_ID, `${label}: X-Request-Id`);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${label}: nosniff`);
  assert.equal(res.headers.get('x-powered-by'), null, `${label}: X-Powered-By`);
}

async function raw(server: TestServer, path: string, init: RequestInit = {}) {
  const response = await fetch(server.url + path, init);
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Stores events through the library, in one transaction; returns the envelopes in emission order. */
async function seed(server: TestServer, ws: string, mailboxes: Array<string | undefined>, offset = 0): Promise<any[]> {
  const published = await server.db.transaction((trx) =>
    publish(
      trx,
      ws,
      mailboxes.map((m, i) => sampleEvent(m, offset + i)),
    ),
  );
  return published.map((p) => JSON.parse(p.envelope));
}

/** Reads pages from `after` until the cursor stops moving; checks each page and the final echo. */
async function readAll(server: TestServer, key: string, limit: number | undefined, start?: string) {
  const events: any[] = [];
  let cursor = start;
  for (let i = 0; i < 1000; i++) {
    const body: Record<string, unknown> = {};
    if (cursor !== undefined) body.after = cursor;
    if (limit !== undefined) body.limit = limit;
    const page = assertPage(await server.post(FEED, body, key), `limit ${limit}`);
    assert.ok(page.events.length <= (limit ?? 100), `page of ${page.events.length} over limit ${limit}`);
    if (page.events.length === 0) {
      if (cursor !== undefined) assert.equal(page.next_cursor, cursor, 'caught up: cursor echoed');
      return { events, cursor: page.next_cursor };
    }
    assert.notEqual(page.next_cursor, cursor, 'cursor moves when events are returned');
    events.push(...page.events);
    cursor = page.next_cursor;
  }
  throw new Error('feed did not end');
}

const ids = (events: any[]) => events.map((e) => e.id);

async function snapshot(server: TestServer) {
  const db = server.db;
  return {
    events: await db('events').select('*').orderBy(['workspace_id', 'seq']),
    feed_counters: await db('feed_counters').select('*').orderBy('workspace_id'),
    api_keys: await db('api_keys').select('*').orderBy('id'),
    workspaces: await db('workspaces').select('*').orderBy('id'),
    settings: await db('settings').select('*').orderBy('key'),
  };
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`POST /v1/event_feed on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    // A workspace with 150 events in mailboxes a, b, c and none, shared by the read-only tests.
    let ws: string;
    let readKey: string;
    let all: any[];
    const MAILBOXES = ['mbx_a', 'mbx_b', 'mbx_c', undefined];

    before(async () => {
      server = await startTestServer(await create());
      ws = await server.workspace();
      readKey = (await server.key(ws, ['read'])).key;
      all = await seed(
        server,
        ws,
        Array.from({ length: 150 }, (_, i) => MAILBOXES[(i * 7 + (i >> 3)) % 4]),
      );
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    describe('paging', () => {
      it('empty workspace: {} gives no events and a cursor that later returns what comes after it', async () => {
        const empty = await server.workspace();
        const { key } = await server.key(empty, ['read', 'write']);
        const first = assertPage(await server.post(FEED, {}, key));
        assert.deepEqual(first.events, []);
        assert.equal(assertPage(await server.post(FEED, {}, key)).next_cursor, first.next_cursor, 'deterministic');
        const again = assertPage(await server.post(FEED, { after: first.next_cursor }, key));
        assert.deepEqual(again, { events: [], next_cursor: first.next_cursor });

        const emitted = await seed(server, empty, ['mbx_a', undefined, 'mbx_b']);
        const page = assertPage(await server.post(FEED, { after: first.next_cursor }, key));
        assert.deepEqual(page.events, emitted);
        assert.notEqual(page.next_cursor, first.next_cursor);
      });

      it('an empty body (no body, no content type) means all defaults: the first 100 events', async () => {
        const res = await server.post(FEED, undefined, readKey);
        const page = assertPage(res);
        assert.equal(page.events.length, 100);
        assert.deepEqual(page.events, all.slice(0, 100));
        // same as {} and as a zero-length JSON body
        assert.equal((await server.post(FEED, {}, readKey)).text, res.text);
        assert.equal((await server.post(FEED, '', readKey)).text, res.text);
        const rest = assertPage(await server.post(FEED, { after: page.next_cursor }, readKey));
        assert.deepEqual(rest.events, all.slice(100));
      });

      it('pages read with limits 1, 7, 100, 500 concatenate to the same sequence, in emission order', async () => {
        assert.equal(new Set(ids(all)).size, 150, 'ids unique');
        for (const limit of [1, 7, 100, 500, undefined]) {
          const { events } = await readAll(server, readKey, limit);
          assert.equal(events.length, 150, `limit ${limit}`);
          assert.deepEqual(ids(events), ids(all), `limit ${limit}`);
          assert.deepEqual(events, all, `limit ${limit}`);
          assert.equal(new Set(ids(events)).size, 150);
        }
      });

      it('limit 1 and 500 are accepted and cap the page', async () => {
        assert.deepEqual(assertPage(await server.post(FEED, { limit: 1 }, readKey)).events, all.slice(0, 1));
        assert.deepEqual(assertPage(await server.post(FEED, { limit: 500 }, readKey)).events, all);
        assert.deepEqual(assertPage(await server.post(FEED, { limit: 150 }, readKey)).events, all);
        assert.deepEqual(assertPage(await server.post(FEED, { limit: 149 }, readKey)).events, all.slice(0, 149));
      });

      it('at the end, next_cursor is byte-identical to after on repeated calls; later events appear once, after', async () => {
        const w = await server.workspace();
        const { key } = await server.key(w, ['read']);
        const old = await seed(server, w, ['mbx_a', 'mbx_b', undefined, 'mbx_a', 'mbx_c']);
        const { events, cursor } = await readAll(server, key, 2);
        assert.deepEqual(events, old);
        for (let i = 0; i < 3; i++) {
          const res = await server.post(FEED, { after: cursor }, key);
          assert.deepEqual(assertPage(res), { events: [], next_cursor: cursor });
          assert.equal(res.text, `{"events":[],"next_cursor":${JSON.stringify(cursor)}}`);
        }
        const fresh = await seed(server, w, ['mbx_c', undefined, 'mbx_b'], 100);
        const more = await readAll(server, key, 2, cursor);
        assert.deepEqual(more.events, fresh);
        const whole = await readAll(server, key, 500);
        assert.deepEqual(whole.events, [...old, ...fresh]);
        assert.equal(whole.cursor, more.cursor, 'same position, same cursor');
      });

      it('reading twice gives byte-identical bodies and writes nothing', async () => {
        const before = await snapshot(server);
        const first = await server.post(FEED, { limit: 7 }, readKey);
        const second = await server.post(FEED, { limit: 7 }, readKey);
        assertPage(first);
        assert.equal(second.text, first.text);
        const after1 = await server.post(FEED, { after: first.json.next_cursor, limit: 500 }, readKey);
        const after2 = await server.post(FEED, { after: first.json.next_cursor, limit: 500 }, readKey);
        assert.equal(after2.text, after1.text);
        const end = await server.post(FEED, { after: after1.json.next_cursor }, readKey);
        assert.deepEqual(assertPage(end).events, []);
        const { key: scoped } = await server.key(ws, ['read'], ['mbx_a']);
        const snapshotWithScopedKey = await snapshot(server);
        await readAll(server, scoped, 3);
        await server.post(FEED, { limit: 0 }, readKey);
        await server.post(FEED, { after: 'garbage' }, readKey);
        const afterReads = await snapshot(server);
        assert.deepEqual(afterReads, snapshotWithScopedKey);
        assert.equal(afterReads.events.length, before.events.length);
        assert.deepEqual(afterReads.feed_counters, before.feed_counters);
        assert.deepEqual(afterReads.settings, before.settings);
        assert.deepEqual(afterReads.workspaces, before.workspaces);
        assert.equal(afterReads.api_keys.length, before.api_keys.length + 1);
      });

      it('works the same for an unverified and a verified workspace', async () => {
        const bodies: string[] = [];
        for (const verified of [false, true]) {
          const w = await server.workspace({ verified });
          const row = await server.db('workspaces').where({ id: w }).first();
          assert.equal(Boolean(row.verified), verified);
          const { key } = await server.key(w, ['read']);
          const seeded = await seed(server, w, ['mbx_a', undefined]);
          const { events } = await readAll(server, key, 1);
          assert.deepEqual(events, seeded);
          bodies.push(JSON.stringify(events.map((e) => ({ ...e, id: null, account: null, occurred_at: null }))));
        }
        assert.equal(bodies[0], bodies[1]);
      });
    });

    describe('parameters', () => {
      it('refuses invalid limits with 400 invalid_argument naming limit', async () => {
        const bodies: Array<[string, string]> = [
          ['0', '{"limit":0}'],
          ['501', '{"limit":501}'],
          ['-1', '{"limit":-1}'],
          ['1.5', '{"limit":1.5}'],
          ['"10"', '{"limit":"10"}'],
          ['"2"', '{"limit":"2"}'],
          ['null', '{"limit":null}'],
          ['true', '{"limit":true}'],
          ['1e400', '{"limit":1e400}'],
          ['-1e400', '{"limit":-1e400}'],
          ['1e20', '{"limit":1e20}'],
          ['9007199254740993', '{"limit":9007199254740993}'],
          ['[]', '{"limit":[]}'],
          ['{}', '{"limit":{}}'],
        ];
        for (const [label, body] of bodies) {
          assertError(await server.post(FEED, body, readKey), 400, 'invalid_argument', /\blimit\b/, `limit ${label}`);
        }
        // the valid neighbours
        assertPage(await server.post(FEED, '{"limit":1.0}', readKey), 'limit 1.0');
        assertPage(await server.post(FEED, '{"limit":5e2}', readKey), 'limit 5e2');
      });

      it('refuses unknown parameters, naming them', async () => {
        for (const name of ['foo', 'cursor', 'Limit', 'after_cursor', 'page_size']) {
          const message = assertError(await server.post(FEED, { [name]: 1 }, readKey), 400, 'invalid_argument', undefined, name);
          assert.ok(message.includes(`"${name}"`), `${name}: ${message}`);
        }
        const message = assertError(await server.post(FEED, { limit: 5, mailbox_id: 'mbx_a' }, readKey), 400, 'invalid_argument');
        assert.ok(message.includes('mailbox_id'), message);
        // Parameters live in the body: a query string is refused, not ignored.
        for (const query of ['?limit=5', '?after=x', '?foo']) {
          const refused = assertError(await server.post(FEED + query, {}, readKey), 400, 'invalid_argument', /query string/, query);
          assert.ok(refused.includes(`"${query.slice(1).split('=')[0]}"`), refused);
        }
      });

      it('refuses bodies that are not JSON objects, malformed JSON and wrong content types with 400', async () => {
        for (const body of ['[]', '[{}]', '"x"', '42', 'null', 'true', '""']) {
          assertError(await server.post(FEED, body, readKey), 400, 'invalid_argument', /object/, body);
        }
        for (const body of ['{', '{"limit": }', "{'limit': 1}", '{"limit":1}garbage', '{"limit":1,}', 'limit=1', '\u0000']) {
          assertError(await server.post(FEED, body, readKey), 400, 'invalid_argument', /JSON/, JSON.stringify(body));
        }
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml']) {
          assertError(await server.post(FEED, '{}', readKey, { 'content-type': type }), 400, 'invalid_argument', /Content-Type/, type);
        }
        // a body without any content type
        const res = await raw(server, FEED, {
          method: 'POST',
          headers: { authorization: `Bearer ${readKey}` },
          body: new TextEncoder().encode('{"limit":1}'),
        });
        assertError(res, 400, 'invalid_argument', /Content-Type/, 'no content type');
      });

      it('takes a body of exactly 64 KiB and refuses one byte more with 413 invalid_argument', async () => {
        const exact = `{"limit":3${' '.repeat(64 * 1024 - 11)}}`;
        assert.equal(Buffer.byteLength(exact), 65536);
        assert.deepEqual(assertPage(await server.post(FEED, exact, readKey)).events, all.slice(0, 3));
        const over = `{"limit":3${' '.repeat(64 * 1024 - 10)}}`;
        assertError(await server.post(FEED, over, readKey), 413, 'invalid_argument', /64 KiB/, '64 KiB + 1');
        assertError(await server.post(FEED, { after: 'x'.repeat(200_000) }, readKey), 413, 'invalid_argument', /64 KiB/, '200 kB');
      });

      it('refuses tampered, truncated and malformed cursors with 400 invalid_argument', async () => {
        const { next_cursor: cursor } = assertPage(await server.post(FEED, { limit: 3 }, readKey));
        const flip = (i: number) => cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1);
        const bad = [
          flip(0),
          flip(5),
          flip(20),
          flip(cursor.length - 1),
          cursor.slice(0, -1),
          cursor.slice(0, 10),
          cursor.slice(1),
          `${cursor}A`,
          `${cursor}=`,
          'garbage',
          ' ',
          'c1.AAAAAAAAAAI.3kTq9xQf',
          'x'.repeat(512),
        ];
        // the standard-base64 spelling, when it differs (the cursor has a - or _)
        const standard = Buffer.from(cursor, 'base64url').toString('base64');
        if (standard !== cursor) bad.push(standard);
        for (const after of bad) {
          assertError(await server.post(FEED, { after, limit: 3 }, readKey), 400, 'invalid_argument', /after|cursor/, after);
        }
        for (const after of ['', 'x'.repeat(513), 5, null, true, [cursor], { cursor }]) {
          assertError(await server.post(FEED, { after }, readKey), 400, 'invalid_argument', /after/, JSON.stringify(after));
        }
      });
    });

    describe('authentication and permissions', () => {
      it('answers 401 unauthorized with WWW-Authenticate: Bearer for missing, malformed, unknown and revoked keys', async () => {
        const { id: revokedId, key: revoked } = await server.key(ws, ['read']);
        assertPage(await server.post(FEED, {}, revoked), 'before revocation');
        assert.equal(await server.revokeKey(revokedId), true);
        const wrongSecret = `${readKey.slice(0, -5)}AAAAA` === readKey ? `${readKey.slice(0, -5)}BBBBB` : `${readKey.slice(0, -5)}AAAAA`;
        const cases: Array<[string, Record<string, string>]> = [
          ['no Authorization', {}],
          ['empty Authorization', { authorization: '' }],
          ['Bearer without token', { authorization: 'Bearer ' }],
          ['garbage token', { authorization: 'Bearer garbage' }],
          ['Basic scheme', { authorization: `Basic ${Buffer.from(`${readKey}:`).toString('base64')}` }],
          ['Basic scheme with the key', { authorization: `Basic ${readKey}` }],
          ['key without scheme', { authorization: readKey }],
          ['unknown well-formed key', { authorization: `Bearer efk_01M6DMBE00KKNS70D02MHHS0KA_${'A'.repeat(43)}` }],
          ['known id, wrong secret', { authorization: `Bearer ${wrongSecret}` }],
          ['revoked key', { authorization: `Bearer ${revoked}` }],
          ['two tokens', { authorization: `Bearer ${readKey} ${readKey}` }],
        ];
        for (const [label, headers] of cases) {
          const res = await server.post(FEED, {}, undefined, headers);
          assertError(res, 401, 'unauthorized', undefined, label);
        }
      });

      it('answers 403 forbidden to a valid key without read', async () => {
        for (const permissions of [['write'], ['admin'], []] as const) {
          const { key } = await server.key(ws, [...permissions]);
          assertError(await server.post(FEED, {}, key), 403, 'forbidden', /read/, permissions.join(','));
          for (const body of ['{"limit":0}', '{"foo":1}', '{"after":"garbage"}', '[]', '{']) {
            assertError(await server.post(FEED, body, key), 403, 'forbidden', /read/, `${permissions.join(',')} ${body}`);
          }
        }
      });

      it('puts an authentication failure before any complaint about the body', async () => {
        const bodies: Array<[string, string, Record<string, string>]> = [
          ['limit 0', '{"limit":0}', {}],
          ['unknown parameter', '{"foo":1}', {}],
          ['bad cursor', '{"after":"garbage"}', {}],
          ['malformed JSON', '{', {}],
          ['array body', '[]', {}],
          ['wrong content type', '{}', { 'content-type': 'text/plain' }],
        ];
        const wrong: string[] = [];
        for (const [label, body, headers] of bodies) {
          for (const [who, auth] of [
            ['no key', {}],
            ['bad key', { authorization: 'Bearer nope' }],
          ] as const) {
            const res = await server.post(FEED, body, undefined, { ...auth, ...headers });
            if (res.status !== 401) wrong.push(`${who} + ${label} → ${res.status} ${res.text}`);
            else assertError(res, 401, 'unauthorized', undefined, `${who} + ${label}`);
          }
        }
        assert.deepEqual(wrong, []);
      });
    });

    describe('scoping', () => {
      it('a key restricted to [a, b] sees exactly the feed filtered to those mailboxes, at every limit', async () => {
        const expected = all.filter((e) => ['mbx_a', 'mbx_b'].includes(e.subject.refs.mailbox_id));
        assert.ok(expected.length > 20 && expected.length < 150);
        const { key } = await server.key(ws, ['read'], ['mbx_a', 'mbx_b']);
        const many = Array.from({ length: 40 }, (_, i) => `mbx_other${i}`);
        const { key: wide } = await server.key(ws, ['read'], [...many.slice(0, 20), 'mbx_b', ...many.slice(20), 'mbx_a']);
        for (const k of [key, wide]) {
          for (const limit of [1, 2, 5, 33, 100, 500]) {
            const { events } = await readAll(server, k, limit);
            assert.deepEqual(ids(events), ids(expected), `limit ${limit}`);
            assert.deepEqual(events, expected);
          }
        }
        const { key: onlyC } = await server.key(ws, ['read'], ['mbx_c']);
        assert.deepEqual(ids((await readAll(server, onlyC, 10)).events), ids(all.filter((e) => e.subject.refs.mailbox_id === 'mbx_c')));
        const { key: none } = await server.key(ws, ['read'], ['mbx_nothing']);
        assert.deepEqual((await readAll(server, none, 10)).events, []);
      });

      it("a restricted key's caught-up cursor is echoed while other mailboxes receive events", async () => {
        const w = await server.workspace();
        const { key } = await server.key(w, ['read'], ['mbx_a', 'mbx_b']);
        const { key: full } = await server.key(w, ['read']);
        const first = await seed(server, w, ['mbx_a', 'mbx_c', undefined, 'mbx_b', 'mbx_c']);
        const { events, cursor } = await readAll(server, key, 1);
        assert.deepEqual(events, [first[0], first[3]]);
        await seed(server, w, ['mbx_c', undefined, 'mbx_c'], 10);
        for (let i = 0; i < 2; i++) {
          assert.deepEqual(assertPage(await server.post(FEED, { after: cursor }, key)), { events: [], next_cursor: cursor });
        }
        const later = await seed(server, w, ['mbx_c', 'mbx_b', undefined, 'mbx_a'], 20);
        const next = await readAll(server, key, 1, cursor);
        assert.deepEqual(next.events, [later[1], later[3]]);
        assert.equal((await readAll(server, full, 500)).events.length, 12);
      });

      it("a key of another workspace never sees this workspace's events, and cannot use its cursors", async () => {
        const other = await server.workspace();
        const { key: otherKey } = await server.key(other, ['read']);
        const { key: otherScoped } = await server.key(other, ['read'], ['mbx_a', 'mbx_b']);
        assert.deepEqual((await readAll(server, otherKey, 50)).events, []);
        const own = await seed(server, other, ['mbx_a', undefined]);
        const { events } = await readAll(server, otherKey, 50);
        assert.deepEqual(events, own);
        assert.ok(events.every((e) => e.account === other));
        assert.deepEqual((await readAll(server, otherScoped, 50)).events, [own[0]]);

        const { next_cursor: cursorOfA } = assertPage(await server.post(FEED, { limit: 2 }, readKey));
        const { next_cursor: emptyCursorOfA } = assertPage(await server.post(FEED, {}, readKey));
        for (const after of [cursorOfA, emptyCursorOfA]) {
          assertError(await server.post(FEED, { after }, otherKey), 400, 'invalid_argument', /after/, 'cursor of A, key of B');
          assertError(await server.post(FEED, { after }, otherScoped), 400, 'invalid_argument', /after/, 'cursor of A, scoped key of B');
        }
        const { next_cursor: cursorOfB } = assertPage(await server.post(FEED, {}, otherKey));
        assertError(await server.post(FEED, { after: cursorOfB }, readKey), 400, 'invalid_argument', /after/, 'cursor of B, key of A');
      });
    });

    describe('HTTP surface', () => {
      it('sets X-Request-Id, nosniff and no X-Powered-By on successes and errors', async () => {
        const responses = [
          await server.post(FEED, {}, readKey),
          await server.post(FEED, { limit: 0 }, readKey),
          await server.post(FEED, {}),
          await server.post('/v1/nope', {}, readKey),
          await server.post(FEED, '{', readKey),
          await raw(server, '/healthz'),
          await raw(server, '/docs'),
        ];
        for (const res of responses) assertCommonHeaders(res, `${res.status}`);
        const ids = new Set(responses.map((r) => r.headers.get('x-request-id')));
        assert.equal(ids.size, responses.length, 'request ids are distinct');
        const echoed = await server.post(FEED, {}, readKey, { 'x-request-id': 'client-req.42' });
        assert.equal(echoed.headers.get('x-request-id'), 'client-req.42');
      });

      it('answers an unknown path under /v1 with 404 and a GET with 405, with error bodies', async () => {
        for (const path of ['/v1/nope', '/v1/event_feed/extra', '/v1/', '/v1/EVENT_FEED', '/V1/event_feed', '/v1//event_feed']) {
          assertError(await server.post(path, {}, readKey), 404, 'invalid_argument', undefined, path);
        }
        // Outside /v1 too: a JSON error body, never express's HTML page.
        assertError(await server.post('/nowhere', {}, readKey), 404, 'invalid_argument', /openapi\.json/, '/nowhere');
        // A trailing slash is the same route, as clients add one.
        assert.equal((await server.post(`${FEED}/`, {}, readKey)).status, 200);
        const get = await raw(server, FEED, { headers: { authorization: `Bearer ${readKey}` } });
        assertError(get, 405, 'invalid_argument', /POST/, 'GET');
        assert.equal(get.headers.get('allow'), 'POST');
        for (const method of ['PUT', 'DELETE', 'PATCH']) {
          assertError(
            await raw(server, FEED, { method, headers: { authorization: `Bearer ${readKey}` } }),
            405,
            'invalid_argument',
            undefined,
            method,
          );
        }
      });

      it('serves /healthz, /readyz, the contract and a self-contained /docs', async () => {
        const health = await raw(server, '/healthz');
        assert.equal(health.status, 200);
        assert.deepEqual(health.json, { status: 'ok' });
        const ready = await raw(server, '/readyz');
        assert.equal(ready.status, 200);
        assert.deepEqual(ready.json, { status: 'ready' });

        const spec = await raw(server, '/openapi.json');
        assert.equal(spec.status, 200);
        assert.match(spec.headers.get('content-type') ?? '', /^application\/json/);
        assert.equal(spec.json.openapi, '3.1.0');
        assert.ok(spec.json.paths['/v1/event_feed']?.post, 'event_feed path');
        assert.ok(spec.json.paths['/v1/emit_event']?.post, 'emit_event path');

        const yaml = await raw(server, '/openapi.yaml');
        assert.equal(yaml.status, 200);
        assert.match(yaml.headers.get('content-type') ?? '', /yaml/);
        // The same document, self-contained: openapi.yaml's refs to schemas/ would not resolve against the server.
        assert.deepEqual(parseYaml(yaml.text), spec.json);

        const docs = await raw(server, '/docs');
        assert.equal(docs.status, 200);
        assert.match(docs.headers.get('content-type') ?? '', /^text\/html/);
        assert.doesNotMatch(docs.text, /https?:\/\//i, 'no absolute URLs in the page');
        const refs = [...docs.text.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
        assert.ok(refs.length >= 2, `assets referenced: ${refs.join(', ')}`);
        for (const ref of refs) {
          assert.match(ref, /^\/(?!\/)/, `local absolute path: ${ref}`);
          const asset = await raw(server, ref);
          assert.equal(asset.status, 200, ref);
          assert.ok(asset.text.length > 0, ref);
          assertCommonHeaders(asset, ref);
          if (ref.endsWith('.js') && !ref.includes('bundle')) assert.doesNotMatch(asset.text, /https?:\/\//, `${ref} loads nothing remote`);
        }
      });
    });
  });
}
