import { placeholders } from './sql.ts';

/*
 * The statements of list_events (newest first = descending seq; keyset on seq, never OFFSET), as
 * text with `?` placeholders. Each one's work is bounded by its own text, whatever plan the
 * database picks and whatever its statistics say:
 *
 * - no filter: the range [hi - (limit + 1), hi), hi being the keyset or the head. Seqs have no
 *   holes between the retention watermark and the head (store/events.ts, store/retention.ts), so
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
 *   continues below the range (event-search.ts). No index serves these combinations in seq order,
 *   so their cost is bounded instead of proportional.
 *
 * On SQLite each statement names its index (INDEXED BY): SQLite is built with STAT4 and an
 * ANALYZE would otherwise let statistics choose. On Postgres each runs with bitmap scans,
 * sequential scans, sorts, hash and merge joins switched off for it alone (event-search-read.ts):
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

export type Dialect = 'sqlite' | 'postgres';
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

const SQLITE_INDEX = {
  seq: 'events_workspace_seq_filters',
  type: 'events_workspace_type_seq',
  mailbox_id: 'events_workspace_mailbox_seq',
  occurred: 'events_workspace_occurred_seq',
} as const;

const indexed = (d: Dialect, index: keyof typeof SQLITE_INDEX) => (d === 'sqlite' ? ` INDEXED BY ${SQLITE_INDEX[index]}` : '');

/**
 * 'range': the `take` newest seqs below `beforeSeq`, or below the head (read in the statement),
 * by their exact range.
 */
export function rangeCandidates(d: Dialect, f: SearchFilters, beforeSeq: number | null, take: number): Statement {
  const from = `SELECT seq FROM events${indexed(d, 'seq')} WHERE workspace_id = ?`;
  if (beforeSeq !== null) return { sql: `${from} AND seq < ? AND seq >= ? ORDER BY seq DESC LIMIT ?`, bindings: [f.workspaceId, beforeSeq, beforeSeq - take, take] };
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
    .map((_, i) => `SELECT seq FROM (SELECT seq FROM events${indexed(d, key)} WHERE workspace_id = ? AND ${key} = ?${below} ORDER BY seq DESC LIMIT ?) k${i}`)
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
    sql: `SELECT seq FROM events${indexed(d, 'seq')} WHERE workspace_id = ? AND seq < ? AND seq >= ?${rest.sql} ORDER BY seq DESC LIMIT ?`,
    bindings: [f.workspaceId, hi, from, ...rest.bindings, take],
  };
}

/**
 * Every filter as conditions on the row (`e.` prefix when given). On SQLite the unary plus keeps
 * them from being taken as index constraints (the statement names its index anyway); Postgres has
 * no unary plus on text, and its plan is pinned otherwise.
 */
function checks(d: Dialect, f: SearchFilters, prefix = ''): Statement {
  const plus = d === 'sqlite' ? '+' : '';
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
    sql: `SELECT seq FROM events${indexed(d, 'occurred')} WHERE workspace_id = ? AND ${parts.join(' AND ')} ORDER BY occurred_at_ms LIMIT ?`,
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
    sql: `SELECT ${factColumns(d)} FROM ${source} ${lookup(d, 'p.seq')} ORDER BY p.seq DESC`,
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
    sql: `SELECT ${factColumns(d)} FROM ${seqList(d)} ${lookup(d, 'p.seq')}${where} ORDER BY p.seq DESC LIMIT ?`,
    bindings: [seqListBinding(d, seqs), f.workspaceId, ...rest.bindings, take],
  };
}

// Postgres also passes the envelope along: a large one stays a TOAST pointer, read only if the page keeps it.
const factColumns = (d: Dialect) => (d === 'sqlite' ? 'e.seq, e.type, e.occurred_at_ms, octet_length(e.envelope) AS size' : 'p.seq, e.type, e.occurred_at_ms, e.size, e.envelope');

/**
 * The row of each seq `p.seq` of the preceding source, one index probe each, the seqs driving.
 * SQLite: CROSS JOIN keeps the seqs as the outer loop; the filters index gives type, mailbox and
 * occurred_at without the row. Postgres: a LATERAL subquery that cannot be flattened into a join
 * (OFFSET 0), which Postgres would otherwise be free to turn around into a scan of the events.
 */
function lookup(d: Dialect, seq: string): string {
  if (d === 'sqlite') return `CROSS JOIN events e${indexed(d, 'seq')} ON e.workspace_id = ? AND e.seq = ${seq}`;
  return `CROSS JOIN LATERAL (SELECT type, mailbox_id, occurred_at_ms, octet_length(envelope) AS size, envelope FROM events WHERE workspace_id = ? AND seq = ${seq} OFFSET 0) e`;
}

/** A list of seqs as a table `p(seq)` in list order, from one binding (so the text never changes). */
const seqList = (d: Dialect) => (d === 'sqlite' ? '(SELECT value AS seq, key AS i FROM json_each(?)) p' : 'unnest(?::bigint[]) WITH ORDINALITY p(seq, i)');
const seqListBinding = (d: Dialect, seqs: readonly number[]) => (d === 'sqlite' ? JSON.stringify(seqs) : `{${seqs.join(',')}}`);

/**
 * SQLite: the envelopes of the listed seqs, in list order, aggregated by the database into one
 * blob, with the seqs alongside in the same aggregate step (so in the same order, which the caller
 * checks; `ordered` asks for the order explicitly, which costs a sort).
 */
export function sqliteEnvelopes(workspaceId: string, seqs: readonly number[], ordered = false): Statement {
  const by = ordered ? ' ORDER BY p.i' : '';
  return {
    sql: `SELECT CAST(group_concat(e.envelope, ','${by}) AS BLOB) AS events, group_concat(e.seq, ','${by}) AS seqs FROM ${seqList('sqlite')} CROSS JOIN events e ON e.workspace_id = ? AND e.seq = p.seq`,
    bindings: [seqListBinding('sqlite', seqs), workspaceId],
  };
}

/**
 * Postgres: the whole page in one statement, from the facts of its candidates: the byte cap
 * applied by the database on the running sum of the envelopes' lengths (the first event always
 * kept); an envelope past it is never sent, nor read when it is large (it stays a TOAST pointer).
 * Rows: seq, type, occurred_at_ms, found (the candidates, kept or not), envelope; newest first.
 */
export function postgresPage(facts: Statement, limit: number, maxBytes: number): Statement {
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

/** The feed's head and the oldest seq retention left: what a call may read lies in [bottom, head]. */
export function feedBounds(workspaceId: string): Statement {
  return {
    sql: 'SELECT (SELECT last_seq FROM feed_counters WHERE workspace_id = ?) AS last_seq, (SELECT pruned_through FROM feed_retention WHERE workspace_id = ?) AS pruned_through',
    bindings: [workspaceId, workspaceId],
  };
}
