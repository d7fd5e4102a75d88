import type { PageQuery, StoredPage } from '../port.ts';
import type { SqliteConnection } from './connection.ts';

/*
 * A feed page read on SQLite, synchronously, on one connection, inside one read transaction (a
 * snapshot: a prune or a commit between its statements cannot change the rows it counted).
 *
 * Every read is bounded by the page itself, whatever the workspace holds:
 * - the whole feed: seqs have no holes (the write path's notes beside inWorkspaceOrder), so the `limit` events after the cursor
 *   are the seqs afterSeq + 1 … afterSeq + limit, and the range says so to the index;
 * - a key restricted to mailboxes: one ordered scan of the (workspace, mailbox, seq) index per
 *   mailbox, merged here one seq at a time, so a page reads about `limit` + (number of mailboxes)
 *   index entries, however sparse or dense the mailboxes are (a single filtered scan would read
 *   every event of the other mailboxes in between).
 * Then the byte cap: the envelopes' sizes first (octet_length does not load the text), so the
 * page stops before the event that would take it past `maxBytes` (always at least one event) and
 * the texts past it are never read; the rest is assembled into one buffer by the database.
 */

// octet_length is taken inside the subquery, on the column itself: there SQLite reads the size from
// the record header. Taken outside, on the subquery's `envelope`, the text had already been copied
// out, overflow pages and all (a page of 500 events of 62 KB read 31 MB to size them: 10 ms).
const SIZES_IN_RANGE =
  'SELECT group_concat(seq) AS seqs, group_concat(size) AS sizes FROM (SELECT seq, octet_length(envelope) AS size FROM events WHERE workspace_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?)';
const SIZES_OF_SEQS =
  'SELECT group_concat(e.seq) AS seqs, group_concat(octet_length(e.envelope)) AS sizes FROM json_each(?) j CROSS JOIN events e ON e.workspace_id = ? AND e.seq = j.value';

/**
 * The page's events, joined by the database. The concatenation follows the rows' order in practice
 * (SQLite does not promise it without ORDER BY inside group_concat, which sorts the page again):
 * the seqs come from the same aggregate step, so they say the order, and assemble() checks it.
 */
const facts = (alias: string) => `, group_concat(${alias}type) AS types, group_concat(ifnull(${alias}occurred_at_ms, '')) AS occurred`;
const ENVELOPES_IN_RANGE = (withFacts: boolean) =>
  `SELECT CAST(group_concat(envelope, ',') AS BLOB) AS events, group_concat(seq) AS seqs, min(stored_at) AS oldest${withFacts ? facts('') : ''} FROM (SELECT seq, envelope, stored_at, type, occurred_at_ms FROM events WHERE workspace_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?)`;
const ENVELOPES_OF_SEQS = (withFacts: boolean) =>
  `SELECT CAST(group_concat(e.envelope, ',') AS BLOB) AS events, group_concat(e.seq) AS seqs, min(e.stored_at) AS oldest${withFacts ? facts('e.') : ''} FROM json_each(?) j CROSS JOIN events e ON e.workspace_id = ? AND e.seq = j.value`;

// One statement per merged mailbox (a statement can run one query at a time): the texts differ by a comment.
const MAILBOX_SCAN = (arm: number) =>
  `SELECT seq FROM events WHERE workspace_id = ? AND mailbox_id = ? AND seq > ? ORDER BY seq LIMIT ? /* arm ${arm} */`;

interface Aggregate {
  seqs: string | null;
  sizes?: string | null;
  events?: Buffer | null;
  types?: string | null;
  occurred?: string | null;
  oldest?: number | null;
}

const EMPTY: StoredPage = { bytes: Buffer.alloc(0), count: 0, lastSeq: undefined, cutAtByteCap: false };

export function readSqlitePage(conn: SqliteConnection, q: PageQuery, maxBytes: number): StoredPage {
  return conn.transaction(() => (q.mailboxes === null ? wholeFeedPage(conn, q, maxBytes) : restrictedPage(conn, q, maxBytes)))();
}

function wholeFeedPage(conn: SqliteConnection, q: PageQuery, maxBytes: number): StoredPage {
  const range = [q.workspaceId, q.afterSeq, q.afterSeq + q.limit] as const;
  const sized = conn.prepare(SIZES_IN_RANGE).get(...range, q.limit) as Aggregate;
  const { fit, cut } = fitting(sized, maxBytes);
  if (fit === 0) return EMPTY;
  return assemble(conn.prepare(ENVELOPES_IN_RANGE(q.withFacts === true)).get(...range, fit) as Aggregate, fit, cut);
}

function restrictedPage(conn: SqliteConnection, q: PageQuery, maxBytes: number): StoredPage {
  const seqs = mergedMailboxSeqs(conn, q);
  if (seqs.length === 0) return EMPTY;
  const { fit, cut } = fitting(conn.prepare(SIZES_OF_SEQS).get(JSON.stringify(seqs), q.workspaceId) as Aggregate, maxBytes);
  return assemble(
    conn.prepare(ENVELOPES_OF_SEQS(q.withFacts === true)).get(JSON.stringify(seqs.slice(0, fit)), q.workspaceId) as Aggregate,
    fit,
    cut,
  );
}

/** How many of the sized rows fit under the cap (at least one), and whether rows were left out for it. */
function fitting(sized: Aggregate, maxBytes: number): { fit: number; cut: boolean } {
  if (sized.seqs === null || sized.sizes == null) return { fit: 0, cut: false };
  const seqs = sized.seqs.split(',');
  const sizes = sized.sizes.split(',');
  assertIncreasing(seqs);
  let used = -1; // n envelopes take n - 1 commas
  let fit = 0;
  for (const size of sizes) {
    used += Number(size) + 1;
    if (used > maxBytes && fit > 0) break;
    fit++;
  }
  return { fit, cut: fit < sizes.length };
}

function assemble(page: Aggregate, expected: number, cut: boolean): StoredPage {
  if (!page.events || page.seqs === null) throw new Error('a page read came back empty where rows were counted');
  const seqs = page.seqs.split(',');
  assertIncreasing(seqs);
  if (seqs.length !== expected) throw new Error(`a page read gave ${seqs.length} rows where ${expected} were counted`);
  const stored: StoredPage = { bytes: page.events, count: seqs.length, lastSeq: Number(seqs.at(-1)), cutAtByteCap: cut };
  if (page.oldest !== null && page.oldest !== undefined) stored.oldestStoredAtMs = Number(page.oldest);
  if (page.types !== undefined)
    stored.facts = {
      types: page.types!.split(','),
      seqs: seqs.map(Number),
      occurredAtMs: page.occurred!.split(',').map((ms) => (ms === '' ? NaN : Number(ms))),
    };
  return stored;
}

/**
 * Rows aggregated out of seq order would be a wrong page, never served: reading the same
 * statement again cannot help, so it fails loudly. (For these plans, a scan of one index in order
 * or a loop over an ordered list, the aggregate follows the rows' order.)
 */
function assertIncreasing(seqs: string[]): void {
  for (let i = 1; i < seqs.length; i++)
    if (Number(seqs[i]) <= Number(seqs[i - 1])) throw new Error('a page aggregate came back out of seq order');
}

/** The first `limit` seqs after the cursor among the key's mailboxes: a k-way merge of per-mailbox index scans. */
function mergedMailboxSeqs(conn: SqliteConnection, q: PageQuery): number[] {
  const mailboxes = [...new Set(q.mailboxes!)];
  const scans = mailboxes.map((mailbox, arm) =>
    (conn.prepare(MAILBOX_SCAN(arm)).pluck() as { iterate(...args: unknown[]): IterableIterator<number> }).iterate(
      q.workspaceId,
      mailbox,
      q.afterSeq,
      q.limit,
    ),
  );
  try {
    const heads = new MinHeap();
    scans.forEach((scan, i) => {
      const first = scan.next();
      if (!first.done) heads.push(Number(first.value), i);
    });
    const seqs: number[] = [];
    while (seqs.length < q.limit && heads.size > 0) {
      const { seq, scan } = heads.pop();
      seqs.push(seq);
      const next = scans[scan]!.next();
      if (!next.done) heads.push(Number(next.value), scan);
    }
    return seqs;
  } finally {
    // An iterator left open keeps its statement busy and its snapshot alive.
    for (const scan of scans) scan.return?.();
  }
}

/** The smallest head seq among the mailbox scans (seqs are distinct: an event has one mailbox). */
class MinHeap {
  readonly #seqs: number[] = [];
  readonly #scans: number[] = [];

  get size(): number {
    return this.#seqs.length;
  }

  push(seq: number, scan: number): void {
    let i = this.#seqs.length;
    this.#seqs.push(seq);
    this.#scans.push(scan);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#seqs[parent]! <= seq) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  pop(): { seq: number; scan: number } {
    const top = { seq: this.#seqs[0]!, scan: this.#scans[0]! };
    const lastSeq = this.#seqs.pop()!;
    const lastScan = this.#scans.pop()!;
    if (this.#seqs.length > 0) {
      this.#seqs[0] = lastSeq;
      this.#scans[0] = lastScan;
      for (let i = 0; ;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < this.#seqs.length && this.#seqs[left]! < this.#seqs[smallest]!) smallest = left;
        if (right < this.#seqs.length && this.#seqs[right]! < this.#seqs[smallest]!) smallest = right;
        if (smallest === i) break;
        this.#swap(i, smallest);
        i = smallest;
      }
    }
    return top;
  }

  #swap(a: number, b: number): void {
    [this.#seqs[a], this.#seqs[b]] = [this.#seqs[b]!, this.#seqs[a]!];
    [this.#scans[a], this.#scans[b]] = [this.#scans[b]!, this.#scans[a]!];
  }
}
