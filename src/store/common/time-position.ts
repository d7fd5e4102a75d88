import type { TimePosition } from '../port.ts';
import type { Adapter } from './adapter.ts';

/*
 * Store.positionAt: where a time falls in a workspace's feed (feed_cursor). stored_at never goes
 * down along a workspace's seqs (each append stores the greatest of the counter's newest stored_at
 * and its clock: appendOnPostgres, appendOnSqlite, migrations 009 and 010), and the seqs
 * retained are exactly prunedThrough + 1 … head, without gaps (the write path's notes beside inWorkspaceOrder). So "the first
 * event stored at or after t" is found by a binary search over those seqs, each step one lookup
 * by the primary key (workspace_id, seq): about log2(retained events) lookups (20 for a million),
 * never a scan of the workspace's events, and no index on stored_at (which every append would
 * pay for). On Postgres each lookup also carries the stored_at bounds the search has learnt
 * (those of the seqs around it), so that only the weekly partitions between them are looked in.
 *
 * The lookups are separate statements: retention may prune between them. A seq of the search
 * found missing was pruned meanwhile (every seq up to the head read first was committed, and only
 * a prefix is ever pruned): the search starts again from the new watermark. A position found just
 * before a prune that then passes it is an expired cursor, which event_feed refuses as such.
 */

const FRAME = `SELECT c.last_seq, c.last_stored_at, r.pruned_through
                 FROM feed_counters c LEFT JOIN feed_retention r ON r.workspace_id = c.workspace_id
                WHERE c.workspace_id = ?`;

/** Searches started again after a prune, before giving up (a prune of one workspace runs rarely, and briefly). */
const ATTEMPTS = 3;

type ReadRows = Adapter['readRows'];
type StoredAtOf = Adapter['storedAtOf'];

/** The feed position of `atMs` (Infinity: the head); see Store.positionAt. */
export async function positionAt(readRows: ReadRows, storedAtOf: StoredAtOf, workspaceId: string, atMs: number): Promise<TimePosition> {
  for (let attempt = 1; ; attempt++) {
    const found = await search(readRows, storedAtOf, workspaceId, atMs);
    if (found) return found;
    if (attempt === ATTEMPTS) throw new Error(`the feed of ${workspaceId} was pruned under ${ATTEMPTS} searches of a time in a row`);
  }
}

/** One search; undefined when a seq it looked up had been pruned meanwhile. */
async function search(readRows: ReadRows, storedAtOf: StoredAtOf, workspaceId: string, atMs: number): Promise<TimePosition | undefined> {
  const [row] = await readRows<{ last_seq: number | string; last_stored_at: number | string; pruned_through: number | string | null }>(
    FRAME,
    [workspaceId],
  );
  const head = Number(row?.last_seq ?? 0);
  const prunedThrough = Number(row?.pruned_through ?? 0);
  const newestStoredAtMs = Number(row?.last_stored_at ?? 0);
  const at = (seq: number): TimePosition => ({ seq, head, prunedThrough, newestStoredAtMs });
  // Nothing retained, or no event stored at or after the time (the newest is the head's): the head.
  if (head <= prunedThrough) return at(Math.max(head, prunedThrough));
  if (atMs === Infinity || (atMs > newestStoredAtMs && newestStoredAtMs > 0)) return at(head);

  // Invariant: every retained seq ≤ lo was stored before atMs, every seq ≥ hi at or after it
  // (lo = prunedThrough and hi = head + 1 stand for "none" at the start).
  let lo = prunedThrough;
  let hi = head + 1;
  let loAt = -Infinity;
  let hiAt = newestStoredAtMs > 0 ? newestStoredAtMs : Infinity;
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    // Within the bounds first; a row outside them was stored out of order before stored_at was
    // kept monotone (migrations 009, 010): asked again without them, so that only a pruned one is missed.
    const storedAt = (await storedAtOf(workspaceId, mid, { fromMs: loAt, toMs: hiAt })) ?? (await storedAtOf(workspaceId, mid));
    if (storedAt === undefined) return undefined;
    if (storedAt >= atMs) {
      hi = mid;
      hiAt = storedAt;
    } else {
      lo = mid;
      loAt = storedAt;
    }
  }
  return at(hi - 1);
}
