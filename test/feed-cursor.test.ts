/**
 * feed_cursor: the cursor for `now` (the head) or for a time (just before the first event stored at
 * or after it), checked by reading event_feed after it; its refusals (invalid values, permission,
 * times whose events may have been pruned), over HTTP and MCP, on SQLite and Postgres.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { mcpTools } from '../generated/mcp-tools.ts';
import type { Clock } from '../src/base/clock.ts';
import { publish } from '../src/library.ts';
import { pruneExpired } from '../src/app/retention-schedule.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { mcpClient } from './support/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { storeAt } from './support/stored-at.ts';

const DAY = 86_400_000;
const MINUTE = 60_000;

/** A clock the test sets. */
class SetClock implements Clock {
  constructor(public ms: number) {}
  now() {
    return new Date(this.ms);
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`feed_cursor on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    const clock = new SetClock(Date.parse('2026-03-02T08:00:00Z'));
    before(async () => {
      server = await startTestServer(await create(), { PRUNE_INTERVAL_SECONDS: '0' }, { clock });
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    const cursorFor = async (key: string, body: unknown = {}) => {
      const res = await server.post('/v1/feed_cursor', body, key);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(Object.keys(res.json), ['cursor']);
      assert.equal(contractErrors('FeedCursorResponse', res.json), null);
      return res.json.cursor as string;
    };
    const feed = async (key: string, after?: string, limit = 500) => {
      const res = await server.post('/v1/event_feed', after === undefined ? { limit } : { after, limit }, key);
      assert.equal(res.status, 200, res.text);
      return res.json as { events: Array<{ id: string }>; next_cursor: string };
    };
    const emit = async (key: string, mailbox: string | undefined = 'mbx_a', n = 0) => {
      const res = await server.post('/v1/emit_event', sampleEvent(mailbox, n), key);
      assert.equal(res.status, 201, res.text);
      return res.json.event.id as string;
    };

    it('now: on an empty workspace, the position event_feed without after echoes; then exactly the events emitted after it', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const empty = await cursorFor(key);
      assert.equal(empty, (await feed(key)).next_cursor, 'the echo of a first read of an empty feed');
      assert.equal(await cursorFor(key, { at: 'now' }), empty, '"now" is the default');
      const before = [await emit(key), await emit(key)];
      const now = await cursorFor(key);
      assert.equal(now, (await feed(key)).next_cursor, 'the head: where a full read ends');
      const later = [await emit(key, 'mbx_b', 1), await emit(key, undefined, 2)];
      const page = await feed(key, now);
      assert.deepEqual(
        page.events.map((e) => e.id),
        later,
      );
      assert.ok(!page.events.some((e) => before.includes(e.id)));
    });

    it('a time: from the first event stored at or after it, exactly, wherever it falls (binary search over 37 events)', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const start = clock.ms;
      const ids: string[] = [];
      const times: number[] = [];
      for (let i = 0; i < 37; i++) {
        clock.ms = start + i * MINUTE + (i % 3 === 0 ? 0 : 7); // some on the minute, some 7 ms after
        times.push(clock.ms);
        ids.push(await emit(key, i % 2 ? 'mbx_a' : 'mbx_b', i));
        if (i % 5 === 4) {
          times.push(clock.ms); // a second event stored in the same millisecond
          ids.push(await emit(key, 'mbx_a', 100 + i));
        }
      }
      const head = await cursorFor(key);
      const firstAt = async (at: string) => (await feed(key, await cursorFor(key, { at }), 1)).events[0]?.id;
      const firstStoredFrom = (ms: number) => ids[times.findIndex((t) => t >= ms)];
      for (let i = 0; i < times.length; i++) {
        for (const ms of [times[i]! - 1, times[i]!, times[i]! + 1]) {
          assert.equal(await firstAt(iso(ms)), firstStoredFrom(ms), `at ${iso(ms)}`);
        }
      }
      assert.equal(await firstAt(iso(start - DAY)), ids[0], 'before the first event (nothing pruned): from the first');
      assert.equal(
        await cursorFor(key, { at: iso(start - DAY) }),
        await cursorFor(key, { at: '0001-01-01T00:00:00Z' }),
        'one position before the first',
      );
      // After the newest, or in the future: the head.
      assert.equal(await cursorFor(key, { at: iso(times.at(-1)! + 1) }), head);
      assert.equal(await cursorFor(key, { at: '9999-12-31T23:59:59.999Z' }), head);
      // Any spelling of the same instant, and digits beyond the millisecond (rounded up: events have whole ones).
      const t = times[10]!;
      const offset = new Date(t + 3600_000).toISOString().replace('Z', '+01:00');
      assert.equal(await cursorFor(key, { at: offset }), await cursorFor(key, { at: iso(t) }));
      assert.equal(
        await firstAt(
          iso(t - 1)
            .replace('Z', '')
            .concat('0001Z'),
        ),
        firstStoredFrom(t),
        'a fraction past t - 1 ms is after it',
      );
      clock.ms = start + 3 * 3600_000;
    });

    it('a key restricted to mailboxes gets a position of its own mailboxes, and its feed shows them from there', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const { key: restricted } = await server.key(ws, ['read'], ['mbx_a']);
      const t0 = clock.ms;
      await emit(key, 'mbx_a', 0);
      clock.ms += MINUTE;
      const fromB = await emit(key, 'mbx_b', 1);
      clock.ms += MINUTE;
      const fromA = await emit(key, 'mbx_a', 2);
      const at = iso(t0 + 30_000);
      const cursor = await cursorFor(restricted, { at });
      assert.deepEqual(
        (await feed(restricted, cursor)).events.map((e) => e.id),
        [fromA],
      );
      assert.deepEqual(
        (await feed(key, await cursorFor(key, { at }))).events.map((e) => e.id),
        [fromB, fromA],
      );
      const now = await cursorFor(restricted);
      assert.equal(now, (await feed(restricted, cursor)).next_cursor, 'now: where its full read ends');
      assert.deepEqual((await feed(restricted, now)).events, []);
    });

    it('a restricted key’s positions tell nothing of other mailboxes’ events: now and times, over HTTP and MCP', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const { key: restricted } = await server.key(ws, ['read'], ['mbx_a']);
      const client = await mcpClient(server.url, restricted);
      try {
        const both = async (body: { at?: string }) => {
          const http = await cursorFor(restricted, body);
          const mcp = await client.callTool({ name: 'feed_cursor', arguments: body });
          assert.equal(mcp.isError, undefined);
          assert.deepEqual(mcp.structuredContent, { cursor: http });
          return http;
        };
        const t0 = clock.ms;
        const emptyNow = await both({});
        // Hidden events only: nothing a restricted key is given may change.
        for (let i = 0; i < 3; i++) {
          clock.ms += MINUTE;
          await emit(key, 'mbx_b', i);
        }
        assert.equal(await both({}), emptyNow, 'now is unmoved by another mailbox’s events');
        const times = [t0 - MINUTE, t0 + 30_000, t0 + 90_000, t0 + 150_000, clock.ms + MINUTE].map(iso);
        const before = await Promise.all(times.map((at) => both({ at })));
        assert.equal(new Set(before).size, 1, 'every time over hidden events gives one position');
        clock.ms += MINUTE;
        await emit(key, 'mbx_a', 10);
        const afterOwn = await both({});
        assert.notEqual(afterOwn, emptyNow, 'its own mailbox moves it');
        for (let i = 0; i < 3; i++) {
          clock.ms += MINUTE;
          await emit(key, 'mbx_b', 20 + i);
        }
        assert.equal(await both({}), afterOwn, 'then others’ events again do not');
        const t1 = clock.ms;
        assert.equal(await both({ at: iso(t1 - 30_000) }), await both({ at: iso(t1 - 150_000) }), 'bisecting hidden events learns nothing');
        assert.equal(await both({ at: iso(t1 - 30_000) }), afterOwn);
        for (const at of times) assert.equal(await both({ at }), emptyNow, 'times before its event, unmoved');
      } finally {
        await client.close();
      }
    });

    it('refuses invalid values (400 invalid_argument), and a key without read (403)', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read']);
      const { key: writeOnly } = await server.key(ws, ['write', 'admin']);
      const cases: Array<[unknown, RegExp]> = [
        [{ at: 'yesterday' }, /^at must be "now" or a valid date-time$/],
        [{ at: 'NOW' }, /^at must be "now" or a valid date-time$/],
        [{ at: '2026-02-30T00:00:00Z' }, /at/],
        [{ at: '2026-12-31T23:59:60Z' }, /leap second/],
        [{ at: 5 }, /^at must be string$/],
        [{ at: null }, /^at must be string$/],
        [{ after: 'x' }, /^unknown parameter "after": feed_cursor accepts only "at"$/],
        [{ at: 'now', limit: 1 }, /unknown parameter "limit"/],
        [[], /request body/],
      ];
      for (const [body, message] of cases) {
        const res = await server.post('/v1/feed_cursor', body, key);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.json.error.code, 'invalid_argument');
        assert.match(res.json.error.message, message, JSON.stringify(body));
      }
      const forbidden = await server.post('/v1/feed_cursor', {}, writeOnly);
      assert.equal(forbidden.status, 403);
      assert.equal(forbidden.json.error.code, 'forbidden');
      assert.match(forbidden.json.error.message, /lacks the "read" permission/);
      assert.equal((await server.post('/v1/feed_cursor', {})).status, 401);
    });

    it('refuses a time whose events may have been pruned, like an expired cursor, and answers past it', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const t0 = clock.ms;
      await emit(key, 'mbx_a', 0);
      clock.ms += MINUTE;
      await emit(key, 'mbx_a', 1);
      clock.ms = t0 + 20 * DAY;
      const recent = [await emit(key, 'mbx_a', 2)];
      clock.ms += MINUTE;
      recent.push(await emit(key, 'mbx_b', 3));
      const recentAt = t0 + 20 * DAY;
      clock.ms = t0 + 38 * DAY;
      const results = await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 1000 });
      assert.equal(results.find((r) => r.workspaceId === ws)?.deleted, 2);

      for (const at of [t0 - DAY, t0, t0 + MINUTE, t0 + 10 * DAY, recentAt - 1, recentAt]) {
        const res = await server.post('/v1/feed_cursor', { at: iso(at) }, key);
        assert.equal(res.status, 400, `${iso(at)}: ${res.text}`);
        assert.equal(res.json.error.code, 'invalid_argument');
        assert.match(res.json.error.message, /^at has expired: .*call event_feed without "after"/);
      }
      // Past the oldest retained event: nothing pruned was stored at or after it.
      assert.deepEqual(
        (await feed(key, await cursorFor(key, { at: iso(recentAt + 1) }))).events.map((e) => e.id),
        [recent[1]],
      );
      assert.equal(await cursorFor(key, { at: iso(clock.ms) }), await cursorFor(key), 'after the newest: the head');
    });

    it('everything pruned: refuses a time at or before the newest pruned event, answers the head after it', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const t0 = clock.ms;
      await emit(key, 'mbx_a', 0);
      clock.ms += MINUTE;
      await emit(key, 'mbx_a', 1);
      const newest = clock.ms;
      clock.ms = t0 + 38 * DAY;
      await pruneExpired(server.services, { retentionDays: 30, pruneBatchSize: 1000 });
      const head = (await feed(key)).next_cursor;
      assert.equal(await cursorFor(key), head, 'now: where event_feed without after starts');
      for (const at of [t0, newest]) assert.equal((await server.post('/v1/feed_cursor', { at: iso(at) }, key)).status, 400, iso(at));
      assert.equal(await cursorFor(key, { at: iso(newest + 1) }), head);
      // A workspace pruned whole before its newest stored_at was kept (0): judged by the retention period.
      await server.db('feed_counters').where({ workspace_id: ws }).update({ last_stored_at: 0 });
      assert.equal((await server.post('/v1/feed_cursor', { at: iso(clock.ms - 31 * DAY) }, key)).status, 400);
      assert.equal(await cursorFor(key, { at: iso(clock.ms - 28 * DAY) }), head);
      clock.ms += DAY;
    });

    it('stored_at never goes down along a workspace’s seqs, whatever the clock of the appender', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      await emit(key);
      const late = new SetClock(clock.ms - 3600_000);
      await server.db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_a', 1)], late));
      const rows = await server.db('events').where({ workspace_id: ws }).orderBy('seq').select('stored_at');
      assert.deepEqual(
        rows.map((r: { stored_at: number | string }) => Number(r.stored_at)),
        [clock.ms, clock.ms],
      );
    });

    it('the binary search finds events placed at stored times (test/support/stored-at.ts)', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const ids: string[] = [];
      for (let i = 0; i < 9; i++) ids.push(await emit(key, 'mbx_a', i));
      const [t1, t2, t3] = [clock.ms - 3 * DAY, clock.ms - 2 * DAY, clock.ms - DAY];
      // Seqs 1-3 at t1, 4-6 at t2, 7-9 at t3 (the last call sets the first three).
      await storeAt(server.db, ws, t3);
      await storeAt(server.db, ws, t2, 6);
      await storeAt(server.db, ws, t1, 3);
      const firstAt = async (ms: number) => (await feed(key, await cursorFor(key, { at: iso(ms) }), 1)).events[0]?.id;
      assert.equal(await firstAt(t1 - 1), ids[0]);
      assert.equal(await firstAt(t1 + 1), ids[3]);
      assert.equal(await firstAt(t2), ids[3]);
      assert.equal(await firstAt(t3), ids[6]);
      assert.equal(await firstAt(t3 + 1), undefined, 'after the newest: the head, nothing follows');
    });

    describe('over MCP', () => {
      let client: Client;
      let key: string;
      before(async () => {
        const ws = await server.workspace();
        key = (await server.key(ws, ['read', 'write'])).key;
        await emit(key, 'mbx_a', 0);
        clock.ms += MINUTE;
        await emit(key, 'mbx_a', 1);
        client = await mcpClient(server.url, key);
      });
      after(async () => {
        await client.close();
      });

      it('is listed with its French title, the contract’s schemas and read-only annotations', async () => {
        const { tools } = await client.listTools();
        const tool = tools.find((t) => t.name === 'feed_cursor');
        assert.ok(tool);
        assert.equal(tool.title, 'Position dans le flux');
        assert.match(tool.description ?? '', /curseur/);
        const generated = mcpTools.find((t) => t.name === 'feed_cursor')!;
        assert.deepEqual(tool.inputSchema, generated.inputSchema);
        assert.deepEqual(tool.outputSchema, generated.outputSchema);
        assert.deepEqual(Object.keys(tool.inputSchema.properties ?? {}), ['at']);
        assert.equal(tool.inputSchema.additionalProperties, false);
        assert.deepEqual(
          { ...tool.annotations, title: undefined },
          { title: undefined, readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
        );
      });

      it('answers French text and the HTTP body as structuredContent', async () => {
        for (const [args, text] of [
          [{}, /^Position : la fin du flux\./],
          [{ at: iso(clock.ms - 30_000) }, /^Position : juste avant le premier événement enregistré à partir du .* \(UTC\)\./],
          [{ at: iso(clock.ms + DAY) }, /^Aucun événement enregistré à partir du .* \(UTC\) : position à la fin du flux\./],
        ] as const) {
          const http = await server.post('/v1/feed_cursor', args, key);
          const mcp = await client.callTool({ name: 'feed_cursor', arguments: args });
          assert.equal(mcp.isError, undefined);
          assert.deepEqual(mcp.structuredContent, http.json);
          const content = (mcp.content as Array<{ type: string; text: string }>)[0]!;
          assert.match(content.text, text);
          assert.ok(content.text.endsWith(`Curseur à passer comme after à event_feed : ${http.json.cursor}`), content.text);
        }
        const refused = await client.callTool({ name: 'feed_cursor', arguments: { at: 'yesterday' } });
        assert.equal(refused.isError, true);
        assert.equal((refused.content as Array<{ text: string }>)[0]!.text, 'invalid_argument : at must be "now" or a valid date-time');
      });
    });
  });
}
