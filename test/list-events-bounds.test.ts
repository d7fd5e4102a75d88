/**
 * list_events costs what it returns, or a bounded amount (issue 18): a page stops at PAGE_MAX_BYTES
 * of envelopes, and a call examines at most SCAN_MAX events where no index serves the filters in
 * order, returning a short (or empty) page whose token continues where it stopped looking.
 * The work is counted through the positions the tokens carry, never timed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { PAGE_MAX_BYTES } from '../src/limits/page-bytes.ts';
import { MERGE_MAX, SCAN_MAX, WINDOW_MAX } from '../src/store/common/event-search-plans.ts';
import { pruneWorkspace } from '../src/store/common/retention.ts';
import { kindNamed } from '../src/store/open-store.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { bouncedEvent, eventsBytes, largeEvent, tokenPosition, type ListFilters } from './support/list-events.ts';
import { rawToolCall } from './support/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const LIST = '/v1/list_events';
const SPARSE = 'mbx_sparse';
const N = 25_000; // 2.5 × SCAN_MAX: a bounded walk takes three calls
const BASE = Date.parse('2026-03-01T00:00:00.000Z');

interface Page {
  events: any[];
  next_page_token: string | null;
  bytes: number;
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`list_events bounds on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;

    async function page(key: string, body: Record<string, unknown>): Promise<Page> {
      const res = await server.post(LIST, body, key);
      assert.equal(res.status, 200, res.text.slice(0, 300));
      assert.equal(contractErrors('ListEventsResponse', res.json), null);
      return { ...res.json, bytes: eventsBytes(res.text) };
    }

    /** Every page of a listing, in order. */
    async function walk(key: string, body: Record<string, unknown>): Promise<Page[]> {
      const pages: Page[] = [];
      let token: string | null | undefined;
      do {
        pages.push(await page(key, token === undefined ? body : { ...body, page_token: token }));
        token = pages.at(-1)!.next_page_token;
        assert.ok(pages.length < 100, 'the listing ends');
      } while (token !== null);
      return pages;
    }

    before(async () => {
      server = await startTestServer(await create());
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    describe('a page stops at PAGE_MAX_BYTES of envelopes', () => {
      let ws: string;
      let key: string;
      let stored: Array<{ id: string; size: number }>; // newest first

      before(async () => {
        ws = await server.workspace();
        key = (await server.key(ws, ['read'])).key;
        for (let i = 0; i < 40; i += 10) {
          await server.db.transaction((trx) =>
            publish(
              trx,
              ws,
              Array.from({ length: 10 }, (_, j) => largeEvent('mbx_a', i + j)),
            ),
          );
        }
        const rows: Array<{ id: string; envelope: string }> = await server
          .db('events')
          .select('id', 'envelope')
          .where('workspace_id', ws)
          .orderBy('seq', 'desc');
        stored = rows.map((row) => ({ id: row.id, size: Buffer.byteLength(row.envelope) }));
        assert.ok(
          stored.every((e) => e.size > 60_000 && e.size < 66_000),
          `events of ~63 KB (${stored[0]!.size})`,
        );
      });

      it('limit 500 gives as many events as fit, and the next page starts right after the last one', async () => {
        const pages = await walk(key, { limit: 500 });
        let at = 0;
        for (const [i, p] of pages.entries()) {
          assert.ok(p.bytes <= PAGE_MAX_BYTES, `page ${i}: ${p.bytes} bytes`);
          // As many as fit: the next event would have taken the page past the cap.
          const fit = stored.slice(at, at + p.events.length).reduce((sum, e) => sum + e.size, p.events.length - 1);
          assert.equal(fit, p.bytes, `page ${i}: the stored envelopes, byte for byte`);
          if (p.next_page_token !== null)
            assert.ok(p.bytes + 1 + stored[at + p.events.length]!.size > PAGE_MAX_BYTES, `page ${i} is as full as the cap allows`);
          assert.deepEqual(
            p.events.map((e) => e.id),
            stored.slice(at, at + p.events.length).map((e) => e.id),
            `page ${i} continues right after the previous one`,
          );
          at += p.events.length;
        }
        assert.equal(at, stored.length, 'every event once');
        assert.ok(pages.length >= 3 && pages[0]!.events.length < 20, `${pages.length} pages of ${pages[0]!.events.length}`);
      });

      it('limit stays a maximum below the cap', async () => {
        const p = await page(key, { limit: 3 });
        assert.deepEqual(
          p.events.map((e) => e.id),
          stored.slice(0, 3).map((e) => e.id),
        );
        assert.notEqual(p.next_page_token, null);
      });

      it('an event larger than the cap comes alone, and the listing goes on', async () => {
        const w = await server.workspace();
        const k = (await server.key(w, ['read'])).key;
        await server.db.transaction((trx) =>
          publish(trx, w, [sampleEvent('mbx_a', 1), largeEvent('mbx_a', 2, true), sampleEvent('mbx_a', 3), sampleEvent('mbx_a', 4)]),
        );
        const ids: string[] = (await server.db('events').select('id').where('workspace_id', w).orderBy('seq', 'desc')).map(
          (r: { id: string }) => r.id,
        );
        const pages = await walk(k, { limit: 500 });
        assert.deepEqual(
          pages.map((p) => p.events.map((e) => e.id)),
          [ids.slice(0, 2), [ids[2]], [ids[3]]],
        );
        assert.ok(pages[1]!.bytes > PAGE_MAX_BYTES, `the large event: ${pages[1]!.bytes} bytes`);
      });

      it('MCP tools/call answers the same capped page', async () => {
        const http = await server.post(LIST, { limit: 500 }, key);
        const mcp = (await rawToolCall(server.url, key, 'list_events', '{"limit":500}')).body.result;
        assert.notEqual(mcp.isError, true, JSON.stringify(mcp).slice(0, 300));
        assert.deepEqual(mcp.structuredContent, http.json);
      });
    });

    describe(`a call examines at most SCAN_MAX (${SCAN_MAX}) events where no index serves the filters`, () => {
      let ws: string;
      let key: string;
      let seqOf: Map<string, number>;
      let bounces: string[]; // ids, newest first

      before(async () => {
        ws = await server.workspace();
        key = (await server.key(ws, ['read'])).key;
        // N events over 40 busy mailboxes, one minute apart; the 3rd and the 24,000th are bounces of a sparse mailbox.
        const at = (i: number) => new Date(BASE + i * 60_000).toISOString();
        for (let i = 0; i < N; i += 5000) {
          const inputs = Array.from({ length: 5000 }, (_, j) => {
            const n = i + j;
            const event = n === 2 || n === 23_999 ? bouncedEvent(SPARSE, n) : sampleEvent(`mbx_${n % 40}`, n);
            return { ...event, occurred_at: at(n) };
          });
          await server.db.transaction((trx) => publish(trx, ws, inputs));
        }
        const rows: Array<{ id: string; seq: number; type: string }> = await server
          .db('events')
          .select('id', 'seq', 'type')
          .where('workspace_id', ws)
          .orderBy('seq', 'desc');
        seqOf = new Map(rows.map((r) => [r.id, Number(r.seq)]));
        bounces = rows.filter((r) => r.type === 'mail.bounced').map((r) => r.id);
        assert.deepEqual(
          bounces.map((id) => seqOf.get(id)),
          [24_000, 3],
        );
      });

      /** Checks a bounded walk: each call stops SCAN_MAX below where it started, and together they return `expected`. */
      async function boundedWalk(k: string, filters: ListFilters, expected: string[]) {
        const pages = await walk(k, { ...filters, limit: 100 });
        let from = N + 1;
        for (const p of pages.slice(0, -1)) {
          const below = await tokenPosition(server.store, ws, p.next_page_token!, filters);
          assert.equal(below, from - SCAN_MAX, 'each call examined SCAN_MAX events and stopped');
          from = below;
        }
        assert.equal(pages.length, Math.ceil(N / SCAN_MAX), 'a call per SCAN_MAX events');
        assert.deepEqual(
          pages.flatMap((p) => p.events.map((e) => e.id)),
          expected,
          'nothing lost, nothing twice',
        );
        return pages;
      }

      it('types and mailboxes: a short page, an empty one, then the end', async () => {
        const pages = await boundedWalk(key, { types: ['mail.bounced'], mailbox_ids: [SPARSE] }, bounces);
        assert.deepEqual(
          pages.map((p) => p.events.length),
          [1, 0, 1],
        );
        assert.deepEqual(
          pages.map((p) => p.next_page_token === null),
          [false, false, true],
        );
      });

      it('a combination that matches nothing: empty pages with tokens, then null', async () => {
        const pages = await boundedWalk(key, { types: ['mail.complained'], mailbox_ids: ['mbx_1', 'mbx_2'] }, []);
        assert.deepEqual(
          pages.map((p) => p.events.length),
          [0, 0, 0],
        );
      });

      it('over MCP, the French text of an empty or short page with a token says the listing goes on, with the token', async () => {
        const filters = { types: ['mail.bounced'], mailbox_ids: [SPARSE], limit: 100 };
        const first = (await rawToolCall(server.url, key, 'list_events', JSON.stringify(filters))).body.result;
        assert.equal(first.structuredContent.events.length, 1);
        assert.match(
          first.content[0].text,
          /D’autres événements plus anciens peuvent correspondre : rappelez list_events avec les mêmes filtres et page_token = \S+$/,
        );
        const token = first.structuredContent.next_page_token;
        const empty = (await rawToolCall(server.url, key, 'list_events', JSON.stringify({ ...filters, page_token: token }))).body.result;
        assert.deepEqual(empty.structuredContent.events, []);
        assert.ok(empty.structuredContent.next_page_token, 'an empty page that is not the end');
        assert.equal(
          empty.content[0].text,
          `Aucun événement trouvé dans la partie parcourue (types : mail.bounced ; boîte : ${SPARSE}) ; la recherche n’est pas finie : rappelez list_events avec les mêmes filtres et page_token = ${empty.structuredContent.next_page_token}`,
        );
      });

      it(`a key restricted to more than MERGE_MAX (${MERGE_MAX}) mailboxes is bounded; to one, it costs what it returns`, async () => {
        const many = (await server.key(ws, ['read'], [SPARSE, ...Array.from({ length: MERGE_MAX }, (_, i) => `mbx_none${i}`)])).key;
        await boundedWalk(many, {}, bounces);
        const one = (await server.key(ws, ['read'], [SPARSE])).key;
        assert.deepEqual(
          await walk(one, { limit: 100 }).then((ps) => ps.map((p) => p.events.map((e) => e.id))),
          [bounces],
          'one call, every match',
        );
      });

      it('types alone, or mailboxes alone, cost what they return: one call, however far back', async () => {
        for (const filters of [{ types: ['mail.bounced'] }, { mailbox_ids: [SPARSE] }, { types: ['mail.complained'] }]) {
          const pages = await walk(key, { ...filters, limit: 100 });
          assert.equal(pages.length, 1, JSON.stringify(filters));
          assert.deepEqual(
            pages[0]!.events.map((e) => e.id),
            filters.types?.[0] === 'mail.complained' ? [] : bounces,
          );
        }
      });

      it(`a time window of more than WINDOW_MAX (${WINDOW_MAX}) events is bounded; a smaller one is not`, async () => {
        const wide = { occurred_after: new Date(BASE).toISOString(), types: ['mail.bounced'] };
        await boundedWalk(key, wide, bounces);
        // 600 events deep in the feed, one of them the old bounce: one call.
        const narrow = { occurred_after: new Date(BASE).toISOString(), occurred_before: new Date(BASE + 600 * 60_000).toISOString() };
        const pages = await walk(key, { ...narrow, limit: 500 });
        assert.deepEqual(
          pages.map((p) => p.events.length),
          [500, 100],
        );
        assert.equal(pages[1]!.events.at(-1).id, [...seqOf].find(([, seq]) => seq === 1)![0]);
      });

      it('a bounded walk stops at the retention watermark, not at the first seq', async () => {
        const w = await server.workspace();
        const k = (await server.key(w, ['read'])).key;
        const old = { now: () => new Date(BASE) };
        await server.db.transaction((trx) =>
          publish(
            trx,
            w,
            Array.from({ length: 15_000 }, (_, i) => sampleEvent('mbx_a', i)),
            old,
          ),
        );
        await server.db.transaction((trx) =>
          publish(
            trx,
            w,
            Array.from({ length: 100 }, (_, i) => sampleEvent('mbx_a', i)),
          ),
        );
        const pruned = await pruneWorkspace(server.db, kindNamed(kind).sql, w, BASE + 1, 5000);
        assert.equal(pruned.prunedThrough, 15_000);
        const pages = await walk(k, { types: ['mail.bounced'], mailbox_ids: ['mbx_a'], limit: 100 });
        assert.deepEqual(
          pages.map((p) => [p.events.length, p.next_page_token]),
          [[0, null]],
          'one call: nothing is left below the watermark',
        );
      });
    });
  });
}
