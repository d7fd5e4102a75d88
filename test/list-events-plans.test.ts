/**
 * list_events' plans never depend on statistics (issue 18): on a table the planner knows nothing
 * about (Postgres: filled by plain INSERTs, autovacuum off, never analyzed) or has statistics for
 * (SQLite after ANALYZE, which it is built to use: STAT4), a call touches what its page needs, or
 * at most SCAN_MAX events, never the rest of the feed. Counted, not timed: on Postgres by the
 * server's own per-transaction counters of index entries and rows read; on SQLite, which keeps no
 * such counters, by the shape of every plan the calls run and the positions their tokens carry.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import type { Knex } from 'knex';
import { PAGE_MAX_BYTES } from '../src/limits/page-bytes.ts';
import { searchEvents } from '../src/store/common/event-search.ts';
import { openStore, type OpenedStore } from '../src/store/open-store.ts';
import { MERGE_MAX, SCAN_MAX, WINDOW_MAX } from '../src/store/common/event-search-plans.ts';
import type { SearchQuery } from '../src/store/port.ts';
import { postgresSearchSession } from '../src/store/postgres/search.ts';
import { EventPartitions, listPartitions, WEEK_MS } from '../src/store/postgres/partitions.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';

const N = 100_000;
const WS = 'ws_plans';
const T0 = 1_772_323_200_000; // 2026-03-01T00:00:00Z: event g occurred at T0 + g seconds
const LIMIT = 500;
const MIDDLE = N / 2 + 1;

/** Event g (1..N): mail.sent / mail.delivered / mail.received in turn, a bounce every 5,000th; mailbox mbx_(g mod 50). */
const FILL = {
  type: `CASE WHEN g % 5000 = 0 THEN 'mail.bounced' WHEN g % 3 = 0 THEN 'mail.sent' WHEN g % 3 = 1 THEN 'mail.delivered' ELSE 'mail.received' END`,
  mailbox: `'mbx_' || (g % 50)`,
  envelope: `'{"id":"evt_' || g || '","pad":"' || substr('${'x'.repeat(300)}', 1, 300) || '"}'`,
};

type Filters = Omit<SearchQuery, 'workspaceId' | 'beforeSeq' | 'limit' | 'maxBytes'>;
const none: Filters = { types: null, mailboxes: null, occurredFromMs: null, occurredBeforeMs: null };
const mailboxes = (n: number) => Array.from({ length: n }, (_, i) => `mbx_${i}`);

/**
 * Each case with what a call of LIMIT events below MIDDLE may touch (index entries and rows):
 * the page and the event after it, read three times (candidates, facts, envelopes), plus what
 * finding them takes.
 */
const page = 3 * (LIMIT + 1);
// The fourth member: the filters are those no index serves in order (a bounded scan).
const CASES: Array<[string, Filters, number, boolean?]> = [
  ['no filter', none, page],
  ['one type', { ...none, types: ['mail.sent'] }, page + (LIMIT + 1)],
  ['two types', { ...none, types: ['mail.delivered', 'mail.sent'] }, page + 2 * (LIMIT + 1)],
  ['a rare type', { ...none, types: ['mail.bounced'] }, page],
  ['an absent type', { ...none, types: ['mail.complained'] }, page],
  ['one mailbox', { ...none, mailboxes: ['mbx_7'] }, page + (LIMIT + 1)],
  [`${MERGE_MAX} mailboxes`, { ...none, mailboxes: mailboxes(MERGE_MAX) }, page + MERGE_MAX * (LIMIT + 1)],
  [`${MERGE_MAX + 8} mailboxes`, { ...none, mailboxes: mailboxes(MERGE_MAX + 8) }, page + SCAN_MAX, true],
  ['a type and a mailbox', { ...none, types: ['mail.bounced'], mailboxes: ['mbx_0'] }, page + SCAN_MAX, true],
  ['a small time window', { ...none, occurredFromMs: T0 + 40_000_000, occurredBeforeMs: T0 + 40_300_000 }, page + WINDOW_MAX + 1],
  ['a large time window', { ...none, occurredFromMs: T0 }, page + WINDOW_MAX + 1 + SCAN_MAX, true],
  ['a large time window and a type', { ...none, occurredFromMs: T0, types: ['mail.received'] }, page + WINDOW_MAX + 1 + SCAN_MAX, true],
];

const query = (f: Filters, beforeSeq: number | null): SearchQuery => ({
  workspaceId: WS,
  ...f,
  beforeSeq,
  limit: LIMIT,
  maxBytes: PAGE_MAX_BYTES,
});

async function fill(db: Knex, kind: 'sqlite' | 'postgres'): Promise<void> {
  await db('workspaces').insert({ id: WS, name: 'plans', verified: true, created_at: 0 });
  await db('feed_counters').insert({ workspace_id: WS, last_seq: N });
  const series =
    kind === 'postgres'
      ? `generate_series(1, ${N}) g`
      : `(WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < ${N}) SELECT g FROM s)`;
  // On Postgres the events spread over the partitions of five weeks, as a 30-day retention keeps them.
  const from = Date.now() - 5 * WEEK_MS;
  const step = Math.floor((5 * WEEK_MS) / N);
  if (kind === 'postgres') {
    for (let week = 0; week <= 5; week++) await new EventPartitions(db).ensureFor(from + week * WEEK_MS);
    for (const { name } of await listPartitions(db)) await db.raw(`ALTER TABLE ${name} SET (autovacuum_enabled = false)`);
  }
  await db.raw(
    `INSERT INTO events (workspace_id, seq, id, type, mailbox_id, stored_at, envelope, occurred_at_ms)
     SELECT '${WS}', g, 'evt_' || g, ${FILL.type}, ${FILL.mailbox}, ${from} + CAST(g AS BIGINT) * ${step}, ${FILL.envelope}, ${T0} + g * 1000 FROM ${series}`,
  );
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`list_events plans on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let database: TestDatabase;
    let store: OpenedStore;
    let db: Knex;

    before(async () => {
      database = await create();
      // Without the service's query timeout, like the CLI: filling 100,000 rows in one statement
      // can outlast its statement_timeout on a busy machine; the reads measured do not depend on it.
      store = openStore(database.url, { queryTimeoutMs: 0 });
      db = store.knex;
      await store.migrate();
      await fill(db, kind);
    });
    after(async () => {
      await store?.close();
      await database?.drop();
    });

    if (kind === 'postgres') {
      /** Index entries and rows read inside `trx` so far (pg_stat_get_xact_*: this transaction's own, not yet reported). */
      async function touched(trx: Knex.Transaction): Promise<number> {
        const [row] = (
          await trx.raw(`SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(c.oid)), 0)::bigint AS n FROM pg_class c
              JOIN pg_inherits i ON i.inhparent = 'events'::regclass
             WHERE c.oid = i.inhrelid OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = i.inhrelid)`)
        ).rows;
        return Number(row.n);
      }

      /** What one call touches, and its page. */
      async function measured(q: SearchQuery) {
        return db.transaction(async (trx) => {
          const before = await touched(trx);
          // The service's list_events statements, run in this transaction so that its counters see them.
          const result = await searchEvents(postgresSearchSession(trx), q);
          return { touched: (await touched(trx)) - before, result };
        });
      }

      it('the table was never analyzed', async () => {
        const stats = (
          await db.raw(
            `SELECT last_analyze, last_autoanalyze FROM pg_stat_user_tables WHERE relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass)`,
          )
        ).rows;
        assert.ok(stats.length >= 5, `${stats.length} partitions`);
        for (const row of stats) assert.deepEqual(row, { last_analyze: null, last_autoanalyze: null });
      });

      for (const [label, filters, bound] of CASES) {
        it(`${label}: a page in the middle of the feed touches at most ${bound} entries and rows`, async () => {
          for (const beforeSeq of [MIDDLE, null]) {
            const { touched: n } = await measured(query(filters, beforeSeq));
            assert.ok(n <= bound, `${label} below ${beforeSeq ?? 'the head'}: touched ${n} (at most ${bound})`);
          }
        });
      }

      it('a whole walk costs in proportion to the feed, not to its square', async () => {
        let total = 0;
        let beforeSeq: number | null = null;
        let calls = 0;
        do {
          const { touched: n, result } = await measured(query(none, beforeSeq));
          total += n;
          calls++;
          beforeSeq = (result as { continueBelow: number | null }).continueBelow;
        } while (beforeSeq !== null && calls < 1000);
        assert.equal(calls, N / LIMIT);
        assert.ok(total <= calls * page, `${total} entries and rows for ${calls} pages`);
      });
    } else {
      /**
       * Every statement the calls prepare on this database, found by watching better-sqlite3
       * prepare them (the service's read connection caches them: each text is prepared once).
       */
      const prepared = new Set<string>();
      let watching = false;
      const prepare = Database.prototype.prepare;

      before(() => {
        Database.prototype.prepare = function (this: Database.Database, sql: string) {
          if (watching) prepared.add(sql);
          return prepare.call(this, sql);
        } as typeof prepare;
      });
      after(() => {
        Database.prototype.prepare = prepare;
      });

      /** The plan lines of every statement that reads events, on a fresh handle (fresh statements). */
      async function plans(f: Filters, beforeSeq: number | null): Promise<{ lines: string[]; continueBelow: number | null }> {
        const handle = openStore(database.url);
        try {
          prepared.clear();
          watching = true;
          const result = (await handle.searchEvents(query(f, beforeSeq))) as { continueBelow?: number | null };
          watching = false;
          const reader = new Database(database.url.slice('sqlite:'.length), { readonly: true });
          try {
            const lines = [...prepared]
              .filter((sql) => /\bevents\b/.test(sql) && /^\s*(SELECT|WITH)/i.test(sql))
              .flatMap((sql) =>
                (reader.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...nulls(sql)) as Array<{ detail: string }>).map(
                  (row) => `${row.detail}    [${sql.slice(0, 60)}…]`,
                ),
              );
            return { lines, continueBelow: result.continueBelow ?? null };
          } finally {
            reader.close();
          }
        } finally {
          watching = false;
          await handle.close();
        }
      }

      // The plan does not depend on the values (each statement names its index, or has no choice).
      const nulls = (sql: string) => Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => null);

      /**
       * A read of events that is bounded by its own constraints: one seq, a seq range closed on
       * both sides, or an equality on type or mailbox (a keyed scan, stopped by its LIMIT), or the
       * time index (a window probe, stopped by its LIMIT). A search on workspace_id alone, or an
       * open seq range, reads the rest of the feed.
       */
      function bounded(line: string): boolean {
        const search = /^SEARCH (events|e) USING .*INDEX \S+ \((.*)\)/.exec(line);
        if (!search) return !/^SCAN (events|e)\b/.test(line) && !/AUTOMATIC/.test(line);
        const constraints = search[2]!;
        return (
          /seq=\?/.test(constraints) ||
          (/seq>\?/.test(constraints) && /seq<\?/.test(constraints)) ||
          /(type|mailbox_id)=\?/.test(constraints) ||
          /occurred_at_ms[<>]/.test(constraints)
        );
      }

      for (const statistics of ['without statistics', 'after ANALYZE']) {
        describe(statistics, () => {
          before(async () => {
            if (statistics === 'after ANALYZE') await db.raw('ANALYZE');
          });
          for (const [label, filters, , scan] of CASES) {
            it(`${label}: every read of events is bounded by its constraints`, async () => {
              for (const beforeSeq of [MIDDLE, null]) {
                const { lines, continueBelow } = await plans(filters, beforeSeq);
                assert.ok(lines.length > 0, 'the calls read events');
                const unbounded = lines.filter((line) => !bounded(line));
                assert.deepEqual(unbounded, [], `${label} below ${beforeSeq ?? 'the head'}:\n${lines.join('\n')}`);
                if (scan && continueBelow !== null) {
                  // A bounded scan: it stopped looking within SCAN_MAX events of where it started.
                  assert.ok(
                    continueBelow >= (beforeSeq ?? N + 1) - SCAN_MAX,
                    `${label}: the call stopped within SCAN_MAX (${continueBelow})`,
                  );
                }
              }
            });
          }
        });
      }
    }
  });
}
