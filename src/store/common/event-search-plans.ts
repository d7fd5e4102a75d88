import { placeholders } from './sql.ts';

/*
 * The statements of list_events (newest first = descending seq; keyset on seq, never OFFSET), as
 * text with `?` placeholders. Each one's work is bounded by its own text, whatever plan the
 * database picks and whatever its statistics say:
 *
 * - no filter: the range [hi - (limit + 1), hi), hi being the keyset or the head. Seqs have no
 *   holes between the retention watermark and the head (the write path's notes beside inWorkspaceOrder, pruneWorkspace), so
 *   that range holds the page and the one event that says whether there is more (fewer: nothing
 *   older is left): any plan reads at most those.
 * - types only, or up to MERGE_MAX mailboxes only: the newest `limit + 1` under each key of the
 *   (workspace_id, key, seq) index, merged. Every entry such a scan reads matches, so it reads at
 *   most keys × (limit + 1) entries and a rare type costs what it returns, however far back.
 * - a time window of at most WINDOW_MAX events: its seqs from the (workspace_id, occurred_at_ms,
 *   seq) index (at most WINDOW_MAX + 1 entries, asked in that index's order), then those rows.
 * - anything else (types and mailboxes, more than MERGE_MAX mailboxes, a larger time window): a
 *   scan of the range [hi - SCAN_MAX, hi) that checks every filter. It stops after `limit + 1`
 *   matches, and otherwise at the range's end: the page is then short, or empty, and the next one
 *   continues below the range (searchEvents). No index serves these combinations in seq order,
 *   so their cost is bounded instead of proportional.
 *
 * On SQLite each statement names its index (INDEXED BY): SQLite is built with STAT4 and an
 * ANALYZE would otherwise let statistics choose. On Postgres each runs with bitmap scans,
 * sequential scans, sorts, hash and merge joins switched off for it alone (postgresSearchSession):
 * what remains is the index orders these statements are written for. Nor may Postgres turn a
 * lookup by seq around into a scan: the (few) seqs drive, and each one is one index probe (see
 * lookup).
 */

/**
 * Events a bounded scan may examine in one call (on SQLite, entries of one index: the rows are
 * never read). Large enough that a combination matching one event in twenty fills a page of 500
 * in one call; small enough that a call costs about what reading such a page does, on SQLite
 * where the event loop waits for it. A sparser combination takes one call per SCAN_MAX events.
 */
export const SCAN_MAX = 10_000;
/** A time window with more events than this is checked by the bounded scan instead. */
export const WINDOW_MAX = 1_000;
/** Up to this many mailboxes are merged key by key; past it, the bounded scan. */
export const MERGE_MAX = 32;

/**
 * Where the list_events statements differ per database: each adapter's search session (sqliteSearchSession, postgresSearchSession) gives its own
 * (SQLite names its indexes and keeps filters off them with a unary plus; Postgres pins its plans
 * instead, in its search session).
 */
export interface Dialect {
  /** After `FROM events`: the index the statement must use, or nothing. */
  indexed(index: 'seq' | 'type' | 'mailbox_id' | 'occurred'): string;
  /** Before a text column in a condition: keeps the condition from being taken as an index constraint, or nothing. */
  notIndexed: string;
  /** The facts' columns: seq, type, occurred_at_ms, size (and the envelope where it can stay unread until kept). */
  factColumns: string;
  /** The row of each seq `seq` of the preceding source (`e`), one index probe each, the seqs driving. */
  lookup(seq: string): string;
  /** A list of seqs as a table `p(seq, i)` in list order, from one binding (so the text never changes). */
  seqList: string;
  seqListBinding(seqs: readonly number[]): string;
}
export type Binding = string | number;

export interface Statement {
  sql: string;
  bindings: Binding[];
}

/** list_events' filters, normalized and checked by the operation. */
export interface SearchFilters {
  workspaceId: string;
  /** Only these types; null: any type. */
  types: readonly string[] | null;
  /** Only events of these mailboxes (events without a mailbox excluded); null: any, with or without one. */
  mailboxes: readonly string[] | null;
  /** occurred_at_ms ≥ this; null: no lower bound. */
  occurredFromMs: number | null;
  /** occurred_at_ms < this; null: no upper bound. */
  occurredBeforeMs: number | null;
}

/** How a page's candidates are found, by filters (a small time window has its own plan: timeWindowProbe). */
export type PlanKind = 'range' | 'keyed' | 'scan';

/** The plan for these filters: 'scan' (bounded) when no index serves them in seq order. */
export function planKind(f: SearchFilters): PlanKind {
  const timed = f.occurredFromMs !== null || f.occurredBeforeMs !== null;
  if (!timed && f.types === null && f.mailboxes === null) return 'range';
  if (!timed && f.types === null && f.mailboxes !== null && f.mailboxes.length <= MERGE_MAX) return 'keyed';
  if (!timed && f.mailboxes === null && f.types !== null) return 'keyed';
  return 'scan';
}

/**
 * 'range': the `take` newest seqs below `beforeSeq`, or below the head (read in the statement),
 * by their exact range.
 */
export function rangeCandidates(d: Dialect, f: SearchFilters, beforeSeq: number | null, take: number): Statement {
  const from = `SELECT seq FROM events${d.indexed('seq')} WHERE workspace_id = ?`;
  if (beforeSeq !== null)
    return {
      sql: `${from} AND seq < ? AND seq >= ? ORDER BY seq DESC LIMIT ?`,
      bindings: [f.workspaceId, beforeSeq, beforeSeq - take, take],
    };
  // Closed on both sides, like every range here, though no seq lies above the head.
  const head = '(SELECT last_seq FROM feed_counters WHERE workspace_id = ?)';
  return {
    sql: `${from} AND seq <= ${head} AND seq > ${head} - ? ORDER BY seq DESC LIMIT ?`,
    bindings: [f.workspaceId, f.workspaceId, f.workspaceId, take, take],
  };
}

/** 'keyed': the newest `take` below `beforeSeq` under each key, from the (workspace_id, key, seq) index, merged. */
export function keyedCandidates(d: Dialect, f: SearchFilters, beforeSeq: number | null, take: number): Statement {
  const [key, values] = f.types === null ? (['mailbox_id', f.mailboxes!] as const) : (['type', f.types] as const);
  const below = beforeSeq === null ? '' : ' AND seq < ?';
  const perKey = values
    .map(
      (_, i) =>
        `SELECT seq FROM (SELECT seq FROM events${d.indexed(key)} WHERE workspace_id = ? AND ${key} = ?${below} ORDER BY seq DESC LIMIT ?) k${i}`,
    )
    .join(' UNION ALL ');
  return {
    sql: `SELECT seq FROM (${perKey}) keyed ORDER BY seq DESC LIMIT ?`,
    bindings: [...values.flatMap((value) => [f.workspaceId, value, ...(beforeSeq === null ? [] : [beforeSeq]), take]), take],
  };
}

/** 'scan': the newest `take` matches among seqs in [from, hi), every filter checked on the filters index. */
export function scanCandidates(d: Dialect, f: SearchFilters, hi: number, from: number, take: number): Statement {
  const rest = checks(d, f);
  return {
    sql: `SELECT seq FROM events${d.indexed('seq')} WHERE workspace_id = ? AND seq < ? AND seq >= ?${rest.sql} ORDER BY seq DESC LIMIT ?`,
    bindings: [f.workspaceId, hi, from, ...rest.bindings, take],
  };
}

/**
 * Every filter as conditions on the row (`e.` prefix when given). On SQLite the unary plus keeps
 * them from being taken as index constraints (the statement names its index anyway); Postgres has
 * no unary plus on text, and its plan is pinned otherwise.
 */
function checks(d: Dialect, f: SearchFilters, prefix = ''): Statement {
  const plus = d.notIndexed;
  const parts: string[] = [];
  const bindings: Binding[] = [];
  if (f.types !== null) {
    parts.push(`${plus}${prefix}type IN (${placeholders(f.types.length)})`);
    bindings.push(...f.types);
  }
  if (f.mailboxes !== null) {
    parts.push(`${plus}${prefix}mailbox_id IN (${placeholders(f.mailboxes.length)})`);
    bindings.push(...f.mailboxes);
  }
  if (f.occurredFromMs !== null) {
    parts.push(`+${prefix}occurred_at_ms >= ?`);
    bindings.push(f.occurredFromMs);
  }
  if (f.occurredBeforeMs !== null) {
    parts.push(`+${prefix}occurred_at_ms < ?`);
    bindings.push(f.occurredBeforeMs);
  }
  return { sql: parts.map((part) => ` AND ${part}`).join(''), bindings };
}

/**
 * The seqs of the time window, at most WINDOW_MAX + 1 of them (more: the window is too large for
 * this plan), read in the occurred_at index's own order so that no plan can read more of it.
 */
export function timeWindowProbe(d: Dialect, f: SearchFilters): Statement {
  const parts: string[] = [];
  const bindings: Binding[] = [f.workspaceId];
  if (f.occurredFromMs !== null) {
    parts.push('occurred_at_ms >= ?');
    bindings.push(f.occurredFromMs);
  }
  if (f.occurredBeforeMs !== null) {
    parts.push('occurred_at_ms < ?');
    bindings.push(f.occurredBeforeMs);
  }
  return {
    sql: `SELECT seq FROM events${d.indexed('occurred')} WHERE workspace_id = ? AND ${parts.join(' AND ')} ORDER BY occurred_at_ms LIMIT ?`,
    bindings: [...bindings, WINDOW_MAX + 1],
  };
}

/** One row per candidate, newest first: seq, type, occurred_at_ms and `size`, the envelope's length in bytes. */
export interface FactRow {
  seq: number;
  type: string;
  occurred_at_ms: number;
  size: number;
}

/**
 * The facts of a plan's candidates, newest first. The envelope's length is read without the
 * envelope itself (SQLite's octet_length reads the record header; Postgres' reads the TOAST
 * pointer): a candidate past the byte cap is never read.
 */
export function factsOfCandidates(d: Dialect, workspaceId: string, candidates: Statement): Statement {
  const source = `(${candidates.sql}) p`;
  return {
    sql: `SELECT ${d.factColumns} FROM ${source} ${d.lookup('p.seq')} ORDER BY p.seq DESC`,
    bindings: [...candidates.bindings, workspaceId],
  };
}

/**
 * The facts of the listed seqs (newest first) that pass every filter but time (the window probe
 * already applied it), at most `take`.
 */
export function factsOfListed(d: Dialect, f: SearchFilters, seqs: readonly number[], take: number): Statement {
  const rest = checks(d, { ...f, occurredFromMs: null, occurredBeforeMs: null }, 'e.');
  const where = rest.sql === '' ? '' : ` WHERE ${rest.sql.slice(' AND '.length)}`;
  return {
    sql: `SELECT ${d.factColumns} FROM ${d.seqList} ${d.lookup('p.seq')}${where} ORDER BY p.seq DESC LIMIT ?`,
    bindings: [d.seqListBinding(seqs), f.workspaceId, ...rest.bindings, take],
  };
}

/** The feed's head and the oldest seq retention left: what a call may read lies in [bottom, head]. */
export function feedBounds(workspaceId: string): Statement {
  return {
    sql: 'SELECT (SELECT last_seq FROM feed_counters WHERE workspace_id = ?) AS last_seq, (SELECT pruned_through FROM feed_retention WHERE workspace_id = ?) AS pruned_through',
    bindings: [workspaceId, workspaceId],
  };
}
