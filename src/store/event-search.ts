import type { Db } from './db.ts';
import { candidatePlan, factsOfCandidates, factsOfListed, timeWindowProbe, WINDOW_MAX, type FactRow, type SearchFilters } from './event-search-plans.ts';
import { withSearchSession, type SearchSession } from './event-search-read.ts';

export { MERGE_MAX, SCAN_MAX, WINDOW_MAX } from './event-search-plans.ts';

/** list_events' query: every filter already normalized and checked by the operation. */
export interface SearchQuery extends SearchFilters {
  /** Keyset: only seq < this (where the previous page stopped); null: from the newest event. */
  beforeSeq: number | null;
  /** At most this many events. */
  limit: number;
  /** At most this many bytes of envelopes and the commas between them, but always one event when one matches. */
  maxBytes: number;
}

/**
 * A page of list_events as stored: the envelopes' JSON text, newest first, joined by commas, as
 * one buffer (nothing is parsed), with what each event's type and time are, in the same order.
 */
export interface SearchPage {
  /** `envelope,envelope,…` (empty when the page is). */
  bytes: Buffer;
  count: number;
  types: string[];
  occurredAtMs: number[];
  /**
   * The next page holds the matching events below this seq: after the last event returned when
   * the page stopped at `limit` or `maxBytes`, or where a bounded scan stopped looking (the page
   * may then be short, or empty). null: no older event matches.
   */
  continueBelow: number | null;
}

const EMPTY: SearchPage = { bytes: Buffer.alloc(0), count: 0, types: [], occurredAtMs: [], continueBelow: null };

/**
 * The matching events below the keyset, newest first (descending seq), within `limit` and
 * `maxBytes`; each call's work is bounded whatever the workspace holds (store/event-search-plans.ts).
 */
export async function searchEvents(db: Db, q: SearchQuery): Promise<SearchPage> {
  if (q.limit < 1 || q.types?.length === 0 || q.mailboxes?.length === 0) return EMPTY;
  if (q.occurredFromMs !== null && q.occurredBeforeMs !== null && q.occurredFromMs >= q.occurredBeforeMs) return EMPTY;
  return withSearchSession(db, async (session) => {
    const { lastSeq, prunedThrough } = await session.bounds(q.workspaceId);
    const bottom = prunedThrough + 1;
    const hi = Math.min(q.beforeSeq ?? lastSeq + 1, lastSeq + 1);
    if (hi <= bottom) return EMPTY;
    // One more than a page: whether it exists says if there is an older page, without another statement.
    const take = q.limit + 1;
    let facts: FactRow[] | undefined;
    let scannedFrom: number | undefined;
    if (q.occurredFromMs !== null || q.occurredBeforeMs !== null) {
      const window = await session.rows<{ seq: number }>(timeWindowProbe(session.dialect, q));
      if (window.length <= WINDOW_MAX) {
        const below = window.map((row) => Number(row.seq)).filter((seq) => seq < hi).sort((a, b) => b - a);
        facts = below.length === 0 ? [] : await session.rows<FactRow>(factsOfListed(session.dialect, q, below, take));
      }
    }
    if (facts === undefined) {
      const plan = candidatePlan(session.dialect, q, hi, bottom, take);
      facts = await session.rows<FactRow>(factsOfCandidates(session.dialect, q.workspaceId, plan.statement));
      scannedFrom = plan.scannedFrom;
    }
    const kept = withinPage(facts, q.limit, q.maxBytes);
    const page = await readPage(session, q.workspaceId, facts.slice(0, kept));
    let continueBelow: number | null = null;
    if (facts.length > kept) continueBelow = Number(facts[kept - 1]!.seq);
    else if (scannedFrom !== undefined && scannedFrom > bottom) continueBelow = scannedFrom;
    return { ...page, continueBelow };
  });
}

/** How many of the candidates (newest first) the page takes: at most `limit`, and `maxBytes` unless it is the first. */
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

async function readPage(session: SearchSession, workspaceId: string, facts: readonly FactRow[]): Promise<Omit<SearchPage, 'continueBelow'>> {
  const { bytes, seqs } = await session.envelopes(
    workspaceId,
    facts.map((fact) => Number(fact.seq)),
  );
  // On SQLite an event pruned between the facts and the envelopes is simply left out.
  const present = seqs.length === facts.length ? facts : facts.filter((fact) => seqs.includes(Number(fact.seq)));
  return {
    bytes,
    count: present.length,
    types: present.map((fact) => fact.type),
    occurredAtMs: present.map((fact) => Number(fact.occurred_at_ms)),
  };
}
