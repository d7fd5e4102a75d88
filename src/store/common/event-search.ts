import type { Knex } from 'knex';

import {
  factsOfCandidates,
  factsOfListed,
  keyedCandidates,
  planKind,
  rangeCandidates,
  SCAN_MAX,
  scanCandidates,
  timeWindowProbe,
  WINDOW_MAX,
  type SearchFilters,
  type Statement,
} from './event-search-plans.ts';
import type { PageRead, SearchSession } from './search-session.ts';

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
 * one buffer (nothing is parsed), with each event's type and time, in the same order.
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
 * `maxBytes`; each call's work is bounded whatever the workspace holds (the plans: rangeCandidates, keyedCandidates, scanCandidates).
 */
export async function searchEvents(session: SearchSession, q: SearchQuery): Promise<SearchPage> {
  if (q.limit < 1 || q.types?.length === 0 || q.mailboxes?.length === 0) return EMPTY;
  if (q.occurredFromMs !== null && q.occurredBeforeMs !== null && q.occurredFromMs >= q.occurredBeforeMs) return EMPTY;
  const d = session.dialect;
  // One more than a page: whether it exists says if there is an older page, without another statement.
  const take = q.limit + 1;
  const page = (facts: Statement) => session.page(q.workspaceId, facts, q.limit, q.maxBytes);

  if (q.occurredFromMs !== null || q.occurredBeforeMs !== null) {
    const window = await session.rows<{ seq: number }>(timeWindowProbe(d, q));
    if (window.length <= WINDOW_MAX) {
      // Every event of the window is known: the page is complete below its last event.
      const below = window
        .map((row) => Number(row.seq))
        .filter((seq) => q.beforeSeq === null || seq < q.beforeSeq)
        .sort((a, b) => b - a);
      return below.length === 0 ? EMPTY : finish(await page(factsOfListed(d, q, below, take)));
    }
  }
  const kind = planKind(q);
  if (kind === 'range') return finish(await page(factsOfCandidates(d, q.workspaceId, rangeCandidates(d, q, q.beforeSeq, take))));
  if (kind === 'keyed') return finish(await page(factsOfCandidates(d, q.workspaceId, keyedCandidates(d, q, q.beforeSeq, take))));

  // A bounded scan: SCAN_MAX seqs below the keyset (or the head), never below what retention left.
  const { lastSeq, prunedThrough } = await session.bounds(q.workspaceId);
  const bottom = prunedThrough + 1;
  const hi = Math.min(q.beforeSeq ?? lastSeq + 1, lastSeq + 1);
  if (hi <= bottom) return EMPTY;
  const from = Math.max(bottom, hi - SCAN_MAX);
  return finish(await page(factsOfCandidates(d, q.workspaceId, scanCandidates(d, q, hi, from, take))), from > bottom ? from : null);
}

/**
 * The page with where the next one starts: right after its last event when candidates were left
 * out (limit, bytes), else where the scan stopped looking (`scannedFrom`), else nowhere.
 */
function finish(read: PageRead, scannedFrom: number | null = null): SearchPage {
  const continueBelow = read.found > read.count ? read.lastSeq! : scannedFrom;
  return { bytes: read.bytes, count: read.count, types: read.types, occurredAtMs: read.occurredAtMs, continueBelow };
}
