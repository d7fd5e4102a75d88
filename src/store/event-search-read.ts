import type { Knex } from 'knex';
import { dbKind, type Db } from './db.ts';
import { envelopesOf, feedBounds, type Dialect, type Statement } from './event-search-plans.ts';
import { readPgPage } from './pg-page.ts';
import { queryRows, readRows } from './sql.ts';

/** How list_events' statements run on one database (store/event-search-plans.ts writes them). */
export interface SearchSession {
  dialect: Dialect;
  /** The feed's last seq (0: empty) and the highest pruned seq (0: none); the first statement of a call. */
  bounds(workspaceId: string): Promise<{ lastSeq: number; prunedThrough: number }>;
  /** Small rows (seqs, facts): never envelopes. */
  rows<T>(statement: Statement): Promise<T[]>;
  /** The envelopes of these seqs joined by commas, in this order, and the seqs still there (all of them but after a prune). */
  envelopes(workspaceId: string, seqs: readonly number[]): Promise<{ bytes: Buffer; seqs: readonly number[] }>;
}

/*
 * Postgres picks a plan per statement from its statistics, and a table filled faster than
 * autovacuum analyzes it (or never analyzed) makes it estimate a few hundred rows where there are
 * millions, and read them all with a bitmap scan and a sort. list_events' statements are written
 * so that an index order bounds their work (event-search-plans.ts); these settings, for this
 * transaction only, take away every plan that does not follow an index order (a sort stays
 * possible where nothing else can give the order, as over a list of seqs, which is bounded).
 * Repeatable read: a page's facts and envelopes come from one snapshot, so retention cannot remove
 * an event between the two.
 */
const PINNED_PLANS = ['enable_seqscan', 'enable_bitmapscan', 'enable_sort', 'enable_hashjoin', 'enable_mergejoin', 'jit']
  .map((name) => `set_config('${name}', 'off', true)`)
  .join(', ');

/** Runs `work` with the session of `db`'s kind: on Postgres inside one read-only transaction. */
export async function withSearchSession<T>(db: Db, work: (session: SearchSession) => Promise<T>): Promise<T> {
  if (dbKind(db) === 'sqlite') return work(sqliteSession(db));
  return db.transaction((trx) => work(postgresSession(trx)), { isolationLevel: 'repeatable read', readOnly: true });
}

interface BoundsRow {
  last_seq: number | null;
  pruned_through: number | null;
}
const boundsOf = (row: BoundsRow | undefined) => ({ lastSeq: Number(row?.last_seq ?? 0), prunedThrough: Number(row?.pruned_through ?? 0) });

function sqliteSession(db: Db): SearchSession {
  // Outside a transaction these run on the read connection: never behind a write (store/sql.ts).
  const rows = <T>(s: Statement) => readRows<T>(db, s.sql, s.bindings);
  return {
    dialect: 'sqlite',
    bounds: async (workspaceId) => boundsOf((await rows<BoundsRow>(feedBounds(workspaceId)))[0]),
    rows,
    envelopes: async (workspaceId, seqs) => {
      if (seqs.length === 0) return { bytes: Buffer.alloc(0), seqs: [] };
      // Without ORDER BY the aggregate's order is not promised, only observed (the list drives the
      // join); the seqs aggregated alongside tell, and a page out of order is read again, ordered.
      for (const ordered of [false, true]) {
        const [row] = await rows<{ events: Buffer | null; seqs: string | null }>(envelopesOf('sqlite', workspaceId, seqs, ordered));
        if (!row?.events || row.seqs === null) return { bytes: Buffer.alloc(0), seqs: [] };
        const found = row.seqs.split(',').map(Number);
        if (isSubsequence(found, seqs)) return { bytes: row.events, seqs: found };
      }
      throw new Error('the ordered envelope aggregate came back out of order');
    },
  };
}

function postgresSession(trx: Knex.Transaction): SearchSession {
  const rows = <T>(s: Statement) => queryRows<T>(trx, s.sql, s.bindings);
  return {
    dialect: 'postgres',
    bounds: async (workspaceId) => {
      const { sql, bindings } = feedBounds(workspaceId);
      // The settings ride along with the first statement: no round trip of their own.
      const [row] = await rows<BoundsRow>({ sql: sql.replace(/^SELECT /, `SELECT ${PINNED_PLANS}, `), bindings });
      return boundsOf(row);
    },
    rows,
    envelopes: async (workspaceId, seqs) => {
      if (seqs.length === 0) return { bytes: Buffer.alloc(0), seqs: [] };
      const { sql, bindings } = envelopesOf('postgres', workspaceId, seqs);
      const page = await readPgPage(trx, sql, bindings);
      // One snapshot with the facts: every seq is there.
      if (page.count !== seqs.length) throw new Error(`list_events read ${page.count} envelopes for ${seqs.length} events`);
      return { bytes: page.bytes, seqs };
    },
  };
}

/** Whether `part` is `whole` with some members left out, in the same order. */
function isSubsequence(part: readonly number[], whole: readonly number[]): boolean {
  let j = 0;
  for (const x of part) {
    while (j < whole.length && whole[j] !== x) j++;
    if (j === whole.length) return false;
    j++;
  }
  return true;
}
