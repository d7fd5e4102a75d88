import type { Knex } from 'knex';
import { feedBounds, type Dialect, type Statement } from '../common/event-search-plans.ts';
import { boundsOf, type BoundsRow, type SearchSession } from '../common/search-session.ts';
import { postgresRows } from './rows.ts';
import { pgModule } from './connection.ts';
import { readPgListPage } from './list-page.ts';

/**
 * Postgres's list_events SQL: no index hints (its plans are pinned instead: PINNED_PLANS below);
 * the facts carry the envelope along, since a large one stays a TOAST pointer, read only if the
 * page keeps it; each lookup is a LATERAL subquery that cannot be flattened into a join (OFFSET 0),
 * which Postgres would otherwise be free to turn around into a scan of the events.
 */
const POSTGRES: Dialect = {
  indexed: () => '',
  // No unary plus on text in Postgres; its plans are pinned otherwise.
  notIndexed: '',
  factColumns: 'p.seq, e.type, e.occurred_at_ms, e.size, e.envelope',
  lookup: (seq) =>
    `CROSS JOIN LATERAL (SELECT type, mailbox_id, occurred_at_ms, octet_length(envelope) AS size, envelope FROM events WHERE workspace_id = ? AND seq = ${seq} OFFSET 0) e`,
  seqList: 'unnest(?::bigint[]) WITH ORDINALITY p(seq, i)',
  seqListBinding: (seqs) => `{${seqs.join(',')}}`,
};

/**
 * The whole page in one statement, from the facts of its candidates: the byte cap applied by the
 * database on the running sum of the envelopes' lengths (the first event always kept); an envelope
 * past it is never sent, nor read when it is large (it stays a TOAST pointer).
 * Rows: seq, type, occurred_at_ms, found (the candidates, kept or not), envelope; newest first.
 */
function postgresPage(facts: Statement, limit: number, maxBytes: number): Statement {
  return {
    sql: `SELECT c.seq, c.type, c.occurred_at_ms, c.found, c.envelope FROM (
        SELECT f.seq, f.type, f.occurred_at_ms, f.envelope, count(*) OVER () AS found,
               row_number() OVER w AS n, sum(f.size + 1) OVER w - 1 AS bytes
          FROM (${facts.sql}) f
        WINDOW w AS (ORDER BY f.seq DESC ROWS UNBOUNDED PRECEDING)
      ) c
      WHERE c.n = 1 OR (c.n <= ? AND c.bytes <= ?)
      ORDER BY c.seq DESC`,
    bindings: [...facts.bindings, limit, maxBytes],
  };
}

/*
 * Postgres picks a plan per statement from its statistics, and a table filled faster than
 * autovacuum analyzes it (or never analyzed) makes it estimate a few hundred rows where there are
 * millions, and read them all with a bitmap scan and a sort. list_events' statements are written
 * so that an index order bounds their work (rangeCandidates, keyedCandidates, scanCandidates); these settings take away
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

export function postgresSearchSession(db: Knex): SearchSession {
  return {
    dialect: POSTGRES,
    // Primary-key lookups: no plan to pin.
    bounds: async (workspaceId) => {
      const { sql, bindings } = feedBounds(workspaceId);
      return boundsOf((await postgresRows<BoundsRow>(db, sql, bindings))[0]);
    },
    rows: async <T>(s: Statement) => {
      // knex sends a statement without bindings as one simple query; its last result is the SELECT's.
      const results = await db.raw(`${PINNED_PLANS} ${inline(s)}`);
      return (Array.isArray(results) ? results.at(-1) : results).rows as T[];
    },
    page: (_workspaceId, facts, limit, maxBytes) => readPgListPage(db, `${PINNED_PLANS} ${inline(postgresPage(facts, limit, maxBytes))}`),
  };
}

/**
 * A statement with its `?` replaced by its bindings as Postgres literals: the simple protocol has
 * no parameters (the plans' Statement binds only strings and integers).
 */
function inline(s: Statement): string {
  const { escapeLiteral } = pgModule();
  let next = 0;
  const text = s.sql.replace(/\?/g, () => {
    const value = s.bindings[next++];
    if (typeof value === 'string') return escapeLiteral(value);
    if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
    throw new Error(`cannot inline the binding ${next} of a list_events statement`);
  });
  if (next !== s.bindings.length) throw new Error(`a list_events statement has ${next} placeholders for ${s.bindings.length} bindings`);
  return text;
}
