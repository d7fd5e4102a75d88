import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { dbKind, type Db } from './db.ts';
import { feedBounds, postgresPage, sqliteEnvelopes, type Dialect, type FactRow, type Statement } from './event-search-plans.ts';
import { readPgListPage, type PgListPage } from './pg-list-page.ts';
import { queryRows, readRows } from './sql.ts';

/** A page as read: the kept envelopes joined by commas, their facts, and how many candidates there were. */
export type PageRead = PgListPage;

/** How list_events' statements run on one database (store/event-search-plans.ts writes them). */
export interface SearchSession {
  dialect: Dialect;
  /** The feed's last seq (0: empty) and the highest pruned seq (0: none). */
  bounds(workspaceId: string): Promise<{ lastSeq: number; prunedThrough: number }>;
  /** Small rows (a time window's seqs): never envelopes. */
  rows<T>(statement: Statement): Promise<T[]>;
  /** The page of these facts (candidates newest first): at most `limit` events and `maxBytes` unless the first alone is larger. */
  page(workspaceId: string, facts: Statement, limit: number, maxBytes: number): Promise<PageRead>;
}

/** The session of `db`'s kind. */
export function searchSession(db: Db | Knex.Transaction): SearchSession {
  return dbKind(db as Db) === 'sqlite' ? sqliteSession(db) : postgresSession(db);
}

interface BoundsRow {
  last_seq: number | null;
  pruned_through: number | null;
}
const boundsOf = (row: BoundsRow | undefined) => ({ lastSeq: Number(row?.last_seq ?? 0), prunedThrough: Number(row?.pruned_through ?? 0) });

/*
 * SQLite runs in this process: a page is two statements, the facts of its candidates, then the
 * envelopes of those the page keeps, aggregated by the database into one blob.
 */
function sqliteSession(db: Db | Knex.Transaction): SearchSession {
  // Outside a transaction these run on the read connection: never behind a write (store/sql.ts).
  const rows = <T>(s: Statement) => readRows<T>(db, s.sql, s.bindings);
  return {
    dialect: 'sqlite',
    bounds: async (workspaceId) => boundsOf((await rows<BoundsRow>(feedBounds(workspaceId)))[0]),
    rows,
    page: async (workspaceId, factsStatement, limit, maxBytes) => {
      const facts = await rows<FactRow>(factsStatement);
      const kept = facts.slice(0, withinPage(facts, limit, maxBytes));
      const { bytes, seqs } = await envelopes(workspaceId, kept.map((fact) => Number(fact.seq)));
      // An event retention removed between the two statements is left out.
      const present = seqs.length === kept.length ? kept : kept.filter((fact) => seqs.includes(Number(fact.seq)));
      return {
        bytes,
        count: present.length,
        types: present.map((fact) => fact.type),
        occurredAtMs: present.map((fact) => Number(fact.occurred_at_ms)),
        lastSeq: kept.length === 0 ? undefined : Number(kept.at(-1)!.seq),
        found: facts.length,
      };
    },
  };

  async function envelopes(workspaceId: string, seqs: number[]): Promise<{ bytes: Buffer; seqs: number[] }> {
    if (seqs.length === 0) return { bytes: Buffer.alloc(0), seqs: [] };
    // Without ORDER BY the aggregate's order is not promised, only observed (the list drives the
    // join); the seqs aggregated alongside tell, and a page out of order is read again, ordered.
    for (const ordered of [false, true]) {
      const [row] = await rows<{ events: Buffer | null; seqs: string | null }>(sqliteEnvelopes(workspaceId, seqs, ordered));
      if (!row?.events || row.seqs === null) return { bytes: Buffer.alloc(0), seqs: [] };
      const found = row.seqs.split(',').map(Number);
      if (isSubsequence(found, seqs)) return { bytes: row.events, seqs: found };
    }
    throw new Error('the ordered envelope aggregate came back out of order');
  }
}

/** How many of the candidates (newest first) a page takes: at most `limit`, and `maxBytes` unless it is the first. */
function withinPage(facts: readonly FactRow[], limit: number, maxBytes: number): number {
  let bytes = 0;
  let kept = 0;
  for (const fact of facts) {
    if (kept === limit) break;
    const next = bytes + (kept > 0 ? 1 : 0) + Number(fact.size);
    if (kept > 0 && next > maxBytes) break;
    bytes = next;
    kept++;
  }
  return kept;
}

/*
 * Postgres picks a plan per statement from its statistics, and a table filled faster than
 * autovacuum analyzes it (or never analyzed) makes it estimate a few hundred rows where there are
 * millions, and read them all with a bitmap scan and a sort. list_events' statements are written
 * so that an index order bounds their work (event-search-plans.ts); these settings take away
 * every plan that does not follow an index order (a sort stays possible where nothing else can
 * give the order, as over a list of seqs, which is bounded). SET LOCAL lasts until the end of the
 * transaction: sent with the statement in one simple-protocol message, which Postgres runs as one
 * implicit transaction, they apply to that statement and are gone with it (no BEGIN, no COMMIT,
 * one round trip; on an error the implicit transaction is rolled back whole). A page is one
 * statement: its facts, byte cap and envelopes in one snapshot.
 */
const PINNED_PLANS = ['enable_seqscan', 'enable_bitmapscan', 'enable_sort', 'enable_hashjoin', 'enable_mergejoin', 'jit']
  .map((name) => `SET LOCAL ${name} = off;`)
  .join(' ');

function postgresSession(db: Db | Knex.Transaction): SearchSession {
  return {
    dialect: 'postgres',
    // Primary-key lookups: no plan to pin.
    bounds: async (workspaceId) => {
      const { sql, bindings } = feedBounds(workspaceId);
      return boundsOf((await queryRows<BoundsRow>(db, sql, bindings))[0]);
    },
    rows: async <T>(s: Statement) => {
      // knex sends a statement without bindings as one simple query; its last result is the SELECT's.
      const results = await db.raw(`${PINNED_PLANS} ${inline(s)}`);
      return (Array.isArray(results) ? results.at(-1) : results).rows as T[];
    },
    page: (_workspaceId, facts, limit, maxBytes) => readPgListPage(db, `${PINNED_PLANS} ${inline(postgresPage(facts, limit, maxBytes))}`),
  };
}

let escapeLiteral: ((text: string) => string) | undefined;

/**
 * A statement with its `?` replaced by its bindings as Postgres literals: the simple protocol has
 * no parameters (event-search-plans.ts binds only strings and integers).
 */
function inline(s: Statement): string {
  // pg is loaded with the first Postgres database only (store/db.ts).
  escapeLiteral ??= (createRequire(import.meta.url)('pg') as { escapeLiteral(text: string): string }).escapeLiteral;
  let next = 0;
  const text = s.sql.replace(/\?/g, () => {
    const value = s.bindings[next++];
    if (typeof value === 'string') return escapeLiteral!(value);
    if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
    throw new Error(`cannot inline the binding ${next} of a list_events statement`);
  });
  if (next !== s.bindings.length) throw new Error(`a list_events statement has ${next} placeholders for ${s.bindings.length} bindings`);
  return text;
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
