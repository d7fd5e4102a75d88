import type { Knex } from 'knex';
import { feedBounds, type Dialect, type FactRow, type Statement } from '../common/event-search-plans.ts';
import { boundsOf, isSubsequence, withinPage, type BoundsRow, type SearchSession } from '../common/search-session.ts';

const INDEX = {
  seq: 'events_workspace_seq_filters',
  type: 'events_workspace_type_seq',
  mailbox_id: 'events_workspace_mailbox_seq',
  occurred: 'events_workspace_occurred_seq',
} as const;

/**
 * SQLite's list_events SQL: every statement names its index (the planner's own choice was not
 * bounded), a unary plus keeps the other filters off indexes, a candidate's envelope length is
 * read from the record header without the envelope, and the seqs drive each lookup (CROSS JOIN
 * keeps them as the outer loop; the filters index gives type, mailbox and occurred_at without the row).
 */
const SQLITE: Dialect = {
  indexed: (index) => ` INDEXED BY ${INDEX[index]}`,
  notIndexed: '+',
  factColumns: 'e.seq, e.type, e.occurred_at_ms, octet_length(e.envelope) AS size',
  lookup: (seq) => `CROSS JOIN events e INDEXED BY ${INDEX.seq} ON e.workspace_id = ? AND e.seq = ${seq}`,
  seqList: '(SELECT value AS seq, key AS i FROM json_each(?)) p',
  seqListBinding: (seqs) => JSON.stringify(seqs),
};

/**
 * The envelopes of the listed seqs, in list order, aggregated by the database into one blob, with
 * the seqs alongside in the same aggregate step (so in the same order, which the caller checks;
 * `ordered` asks for the order explicitly, which costs a sort).
 */
function sqliteEnvelopes(workspaceId: string, seqs: readonly number[], ordered = false): Statement {
  const by = ordered ? ' ORDER BY p.i' : '';
  return {
    sql: `SELECT CAST(group_concat(e.envelope, ','${by}) AS BLOB) AS events, group_concat(e.seq, ','${by}) AS seqs FROM ${SQLITE.seqList} CROSS JOIN events e ON e.workspace_id = ? AND e.seq = p.seq`,
    bindings: [SQLITE.seqListBinding(seqs), workspaceId],
  };
}

/*
 * SQLite runs in this process: a page is two statements, the facts of its candidates, then the
 * envelopes of those the page keeps, aggregated by the database into one blob.
 */
export function sqliteSearchSession(readRows: <T>(sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>): SearchSession {
  // On the read connection: never behind a write (SqliteReader).
  const rows = <T>(s: Statement) => readRows<T>(s.sql, s.bindings);
  return {
    dialect: SQLITE,
    bounds: async (workspaceId) => boundsOf((await rows<BoundsRow>(feedBounds(workspaceId)))[0]),
    rows,
    page: async (workspaceId, factsStatement, limit, maxBytes) => {
      const facts = await rows<FactRow>(factsStatement);
      const kept = facts.slice(0, withinPage(facts, limit, maxBytes));
      const { bytes, seqs } = await envelopes(
        workspaceId,
        kept.map((fact) => Number(fact.seq)),
      );
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
