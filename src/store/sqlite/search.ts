import type { Knex } from 'knex';
import { feedBounds, sqliteEnvelopes, type FactRow, type Statement } from '../common/event-search-plans.ts';
import { boundsOf, isSubsequence, withinPage, type BoundsRow, type SearchSession } from '../common/search-session.ts';

/*
 * SQLite runs in this process: a page is two statements, the facts of its candidates, then the
 * envelopes of those the page keeps, aggregated by the database into one blob.
 */
export function sqliteSearchSession(readRows: <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>): SearchSession {
  // On the read connection: never behind a write (SqliteReader).
  const rows = <T>(s: Statement) => readRows<T>(s.sql, s.bindings);
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

