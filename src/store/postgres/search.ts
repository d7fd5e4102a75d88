import type { Knex } from 'knex';
import { feedBounds, postgresPage, type Statement } from '../common/event-search-plans.ts';
import { boundsOf, type BoundsRow, type SearchSession } from '../common/search-session.ts';
import { queryRows } from '../common/sql.ts';
import { pgModule } from './connection.ts';
import { readPgListPage } from './list-page.ts';

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

export function postgresSearchSession(db: Knex): SearchSession {
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


/**
 * A statement with its `?` replaced by its bindings as Postgres literals: the simple protocol has
 * no parameters (event-search-plans.ts binds only strings and integers).
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

