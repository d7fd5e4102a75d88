import type { Dialect, FactRow, Statement } from './event-search-plans.ts';

/** A page as read: the kept envelopes joined by commas, their facts, and how many candidates there were. */
export interface PageRead {
  /** `envelope,envelope,…` (empty when the page is). */
  bytes: Buffer;
  count: number;
  types: string[];
  occurredAtMs: number[];
  /** Seq of the last candidate kept (the page's last event unless retention removed it meanwhile). */
  lastSeq: number | undefined;
  /** How many candidates the facts statement found. */
  found: number;
}

/** How list_events' statements run on one database (the plans, rangeCandidates and the rest, write them). */
export interface SearchSession {
  dialect: Dialect;
  /** The feed's last seq (0: empty) and the highest pruned seq (0: none). */
  bounds(workspaceId: string): Promise<{ lastSeq: number; prunedThrough: number }>;
  /** Small rows (a time window's seqs): never envelopes. */
  rows<T>(statement: Statement): Promise<T[]>;
  /** The page of these facts (candidates newest first): at most `limit` events and `maxBytes` unless the first alone is larger. */
  page(workspaceId: string, facts: Statement, limit: number, maxBytes: number): Promise<PageRead>;
}

export interface BoundsRow {
  last_seq: number | null;
  pruned_through: number | null;
}
export const boundsOf = (row: BoundsRow | undefined) => ({
  lastSeq: Number(row?.last_seq ?? 0),
  prunedThrough: Number(row?.pruned_through ?? 0),
});

/** How many of the candidates (newest first) a page takes: at most `limit`, and `maxBytes` unless it is the first. */
export function withinPage(facts: readonly FactRow[], limit: number, maxBytes: number): number {
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

/** Whether `part` is `whole` with some members left out, in the same order. */
export function isSubsequence(part: readonly number[], whole: readonly number[]): boolean {
  let j = 0;
  for (const x of part) {
    while (j < whole.length && whole[j] !== x) j++;
    if (j === whole.length) return false;
    j++;
  }
  return true;
}
