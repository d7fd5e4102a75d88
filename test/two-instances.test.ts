/**
 * Two servers on one Postgres database: they share the cursor secret (generated once into
 * `settings` when EVENT_FEED_SECRET is absent), serve each other's events, and accept each other's
 * cursors; with EVENT_FEED_SECRET set, cursors agree across instances with the same secret and are
 * refused by an instance with another one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CursorCodec } from '../src/feed/cursor.ts';
import { migrationSource } from '../src/store/common/migrate.ts';
import { openStore } from '../src/store/open-store.ts';
import { sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const SECRET_X = 'x'.repeat(16) + 'shared-secret-of-instances-3-and-4';
const SECRET_Y = 'y'.repeat(16) + 'another-secret-of-instance-5-only!';

async function emit(server: TestServer, key: string, n: number): Promise<any> {
  const response = await server.post('/v1/emit_event', sampleEvent('mbx_sales', n), key);
  assert.equal(response.status, 201, response.text);
  return response.json.event;
}

async function feed(server: TestServer, key: string, body: { after?: string; limit?: number }) {
  const response = await server.post('/v1/event_feed', body, key);
  assert.equal(response.status, 200, response.text);
  return { text: response.text, events: response.json.events as any[], next_cursor: response.json.next_cursor as string };
}

describe(
  'two instances on one postgres database',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
    describe('without EVENT_FEED_SECRET: the generated secret is shared through the database', () => {
      let database: TestDatabase;
      let one: TestServer;
      let two: TestServer;
      let ws: string;
      let key: string;

      before(async () => {
        database = await postgresDatabase();
        one = await startTestServer(database);
        two = await startTestServer(database);
        ws = await one.workspace();
        ({ key } = await one.key(ws, ['read', 'write']));
      });
      after(async () => {
        await one?.stop();
        await two?.stop();
        await database?.drop();
      });

      it('stores exactly one generated secret, and both instances sign cursors with it', async () => {
        const rows = await one.db('settings').select('key', 'value');
        assert.equal(rows.length, 1);
        assert.equal(rows[0].key, 'cursor_secret');
        assert.match(rows[0].value, /^[A-Za-z0-9_-]{43}$/, '32 random bytes, base64url');
        const expected = new CursorCodec(rows[0].value).encode(ws, 0);
        assert.equal((await feed(one, key, {})).next_cursor, expected);
        assert.equal((await feed(two, key, {})).next_cursor, expected);
      });

      it('events emitted through either instance are read through the other; cursors continue across them', async () => {
        const e1 = await emit(one, key, 1);
        const e2 = await emit(two, key, 2);
        const e3 = await emit(one, key, 3);

        // Read through instance 2 what instance 1 (and 2) emitted, and vice versa.
        const viaTwo = await feed(two, key, { limit: 2 });
        assert.deepEqual(viaTwo.events, [e1, e2]);
        const viaOne = await feed(one, key, { limit: 2 });
        assert.equal(viaOne.text, viaTwo.text, 'the same position gives byte-identical responses (and cursors) from both');

        // A cursor issued by instance 2 continues on instance 1, and the other way round.
        const continuedOnOne = await feed(one, key, { after: viaTwo.next_cursor });
        assert.deepEqual(continuedOnOne.events, [e3]);
        const continuedOnTwo = await feed(two, key, { after: viaTwo.next_cursor });
        assert.equal(continuedOnTwo.text, continuedOnOne.text);

        const e4 = await emit(two, key, 4);
        const tail = await feed(one, key, { after: continuedOnOne.next_cursor });
        assert.deepEqual(tail.events, [e4]);
        const empty = await feed(two, key, { after: tail.next_cursor });
        assert.deepEqual(empty.events, []);
        assert.equal(empty.next_cursor, tail.next_cursor);

        // Alternating instances page by page: every event once, in order.
        const collected: any[] = [];
        let after: string | undefined;
        for (let i = 0; i < 6; i++) {
          const page = await feed(i % 2 === 0 ? one : two, key, after === undefined ? { limit: 1 } : { after, limit: 1 });
          collected.push(...page.events);
          after = page.next_cursor;
        }
        assert.deepEqual(collected, [e1, e2, e3, e4]);
        assert.deepEqual(new Set(collected.map((e) => e.id)).size, 4);

        const secret = (await two.db('settings').where({ key: 'cursor_secret' }).first()).value as string;
        assert.equal(after, new CursorCodec(secret).encode(ws, 4));
      });

      it('the same event re-emitted at once through both instances, in several shapes, is stored once: one 201, the rest 200', async () => {
        const ws2 = await one.workspace();
        const { key: key2 } = await one.key(ws2, ['read', 'write']);
        const event = { ...sampleEvent('mbx_sales', 9), id: 'evt_01M7YP7PAG3YR9FGTGP73H5R7W', occurred_at: '2026-11-21T09:14:03.512Z' };
        const shapes = [
          event,
          { ...event, occurred_at: '2026-11-21T10:14:03.512+01:00' },
          { data: event.data, subject: event.subject, type: event.type, id: event.id },
        ];
        for (let round = 0; round < 3; round++) {
          const answers = await Promise.all(
            Array.from({ length: 12 }, (_, i) => (i % 2 ? two : one).post('/v1/emit_event', shapes[i % shapes.length], key2)),
          );
          const statuses = answers.map((a) => a.status).sort();
          const expected = Array.from({ length: 12 }, (_, i) => (round === 0 && i === 11 ? 201 : 200));
          assert.deepEqual(statuses, expected, answers.map((a) => `${a.status} ${a.text.slice(0, 200)}`).join('\n'));
          for (const a of answers) assert.equal(a.text, answers[0]!.text);
        }
        assert.equal((await feed(two, key2, {})).events.length, 1);
      });

      it('a third instance started later reuses the stored secret instead of generating another', async () => {
        const before = await one.db('settings').select('key', 'value');
        const three = await startTestServer(database);
        try {
          assert.deepEqual(await three.db('settings').select('key', 'value'), before);
          const page = await feed(one, key, { limit: 3 });
          assert.equal((await feed(three, key, { after: page.next_cursor })).events.length, 1);
          assert.equal((await feed(three, key, { limit: 3 })).text, page.text);
        } finally {
          await three.stop();
        }
      });
    });

    it('two instances migrating a fresh database at the same moment both succeed (src/store/postgres/adapter.ts)', async () => {
      // Store.migrate says it is "safe when several instances start at once"; two instances started
      // together on an empty database is exactly what a rolling deploy or a scaled-out start does.
      const database = await postgresDatabase();
      const stores = [openStore(database.url), openStore(database.url)];
      try {
        const outcomes = await Promise.allSettled(stores.map((store) => store.migrate()));
        assert.deepEqual(
          outcomes.map((o) => (o.status === 'rejected' ? `rejected: ${String(o.reason).slice(0, 300)}` : 'fulfilled')),
          ['fulfilled', 'fulfilled'],
        );
        const applied = outcomes.flatMap((o) => (o.status === 'fulfilled' ? o.value : []));
        assert.deepEqual(
          applied.sort(),
          (await migrationSource('sqlite').getMigrations([])).sort(),
          'each migration is applied once, by one of them',
        );
      } finally {
        await Promise.all(stores.map((store) => store.close()));
        await database.drop();
      }
    });

    it('two instances started at the same moment on a migrated database agree on the secret', async () => {
      const database = await postgresDatabase();
      const setup = openStore(database.url);
      await setup.migrate().finally(() => setup.close());
      const servers: TestServer[] = [];
      try {
        const started = await Promise.allSettled([startTestServer(database), startTestServer(database)]);
        for (const s of started) if (s.status === 'fulfilled') servers.push(s.value);
        assert.deepEqual(
          started.map((s) => (s.status === 'rejected' ? String(s.reason) : 'started')),
          ['started', 'started'],
        );
        const [a, b] = servers as [TestServer, TestServer];
        assert.equal((await a.db('settings').select('key')).length, 1);
        const ws = await a.workspace();
        const { key } = await a.key(ws, ['read', 'write']);
        await emit(b, key, 1);
        assert.equal((await feed(a, key, {})).text, (await feed(b, key, {})).text);
      } finally {
        for (const s of servers) await s.stop();
        await database.drop();
      }
    });

    describe('with EVENT_FEED_SECRET', () => {
      let database: TestDatabase;
      let three: TestServer;
      let four: TestServer;
      let five: TestServer;
      let ws: string;
      let key: string;

      before(async () => {
        database = await postgresDatabase();
        three = await startTestServer(database, { EVENT_FEED_SECRET: SECRET_X });
        four = await startTestServer(database, { EVENT_FEED_SECRET: SECRET_X });
        five = await startTestServer(database, { EVENT_FEED_SECRET: SECRET_Y });
        ws = await three.workspace();
        ({ key } = await three.key(ws, ['read', 'write']));
      });
      after(async () => {
        await three?.stop();
        await four?.stop();
        await five?.stop();
        await database?.drop();
      });

      it('instances with the same secret issue identical cursors and continue each other', async () => {
        const e1 = await emit(three, key, 1);
        const e2 = await emit(four, key, 2);
        const p3 = await feed(three, key, { limit: 1 });
        const p4 = await feed(four, key, { limit: 1 });
        assert.deepEqual(p3.events, [e1]);
        assert.equal(p4.next_cursor, p3.next_cursor);
        assert.equal(p3.next_cursor, new CursorCodec(SECRET_X).encode(ws, 1), 'signed with EVENT_FEED_SECRET');
        assert.deepEqual((await feed(four, key, { after: p3.next_cursor })).events, [e2]);
        assert.deepEqual((await feed(three, key, { after: p4.next_cursor })).events, [e2]);
      });

      it('an instance with another secret refuses their cursors with 400 invalid_argument, and they refuse its', async () => {
        const fromThree = (await feed(three, key, { limit: 1 })).next_cursor;
        const refused = await five.post('/v1/event_feed', { after: fromThree }, key);
        assert.equal(refused.status, 400, refused.text);
        assert.equal(refused.json.error.code, 'invalid_argument');
        assert.match(refused.json.error.message, /not a valid cursor/);

        // It still serves the feed itself, with cursors of its own that the others refuse.
        const own = await feed(five, key, { limit: 1 });
        assert.equal(own.events.length, 1);
        assert.notEqual(own.next_cursor, fromThree);
        assert.equal(own.next_cursor, new CursorCodec(SECRET_Y).encode(ws, 1));
        const back = await four.post('/v1/event_feed', { after: own.next_cursor }, key);
        assert.equal(back.status, 400, back.text);
        assert.equal(back.json.error.code, 'invalid_argument');
      });

      it('a configured secret is not replaced by, nor written to, the settings table', async () => {
        assert.deepEqual(await three.db('settings').select('key'), []);
        // An instance on the same database without the variable generates its own: it refuses theirs.
        const plain = await startTestServer(database);
        try {
          const fromThree = (await feed(three, key, { limit: 1 })).next_cursor;
          const refused = await plain.post('/v1/event_feed', { after: fromThree }, key);
          assert.equal(refused.status, 400, refused.text);
          assert.equal(refused.json.error.code, 'invalid_argument');
        } finally {
          await plain.stop();
        }
      });

      it('a secret shorter than 32 characters is refused at start', async () => {
        await assert.rejects(
          startTestServer(database, { EVENT_FEED_SECRET: 'z'.repeat(31) }),
          /EVENT_FEED_SECRET must be at least 32 characters/,
        );
      });
    });
  },
);
