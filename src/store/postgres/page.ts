import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { PAGE_MAX_BYTES } from '../../limits/page-bytes.ts';
import type { PageQuery, StoredPage } from '../port.ts';

/*
 * A feed page read on Postgres straight into bytes. pg decodes every field of every row into a
 * string and keeps the rows until the query ends; on a page of 500 that is about a megabyte of
 * young objects that outlive a scavenge or two, are promoted, and fill the old generation: under
 * the service's heap bounds a page then cost several times its CPU in major GC. Here each row's envelope is written
 * into a scratch buffer as its DataRow message arrives, so its string dies at once, and the page is
 * copied out at its exact size at the end.
 */

interface PgClient {
  query(query: object, callback: (err: Error | null) => void): void;
}

interface PgQueryClass {
  new (config: { name?: string; text: string; values: unknown[] }): object;
}

/** What a page query collects while its rows arrive. */
interface PageSink {
  scratch: Buffer;
  used: number;
  count: number;
  lastSeq: number | undefined;
  prunedThrough: number | undefined;
  /** The most envelope bytes the page may hold (it always takes its first event). */
  maxBytes: number;
  /** A row came that did not fit: it and every later one were left out. */
  cut: boolean;
  types: string[] | undefined;
  occurredAtMs: number[] | undefined;
  seqs: number[] | undefined;
  oldestStoredAtMs: number | undefined;
}

// Scratch buffers are reused across pages (one per page in flight): a page costs one allocation, its own.
const SCRATCH_BYTES = 512 * 1024;
const SCRATCH_KEPT_MAX_BYTES = 4 * 1024 * 1024;
const SCRATCH_KEPT = 4;
const scratchPool: Buffer[] = [];

let PageQuery: (new (config: { name?: string; text: string; values: unknown[] }, sink: PageSink) => object) | undefined;

/** pg's own Query (parse, bind, timeouts, errors), keeping its rows as bytes instead of row objects. */
function pageQueryClass() {
  if (PageQuery) return PageQuery;
  const { Query } = createRequire(import.meta.url)('pg') as { Query: PgQueryClass };
  PageQuery = class extends Query {
    constructor(
      config: { name?: string; text: string; values: unknown[] },
      private readonly sink: PageSink,
    ) {
      super(config);
    }
    /**
     * Columns: seq, envelope (text format), stored_at, and when asked, type and occurred_at_ms; a
     * null seq carries the retention watermark instead (pgPageStatement below).
     */
    handleDataRow(message: { fields: [string | null, string | null, string | null, string?, string?] }): void {
      const [seq, envelope, storedAt, type, occurredAtMs] = message.fields;
      const sink = this.sink;
      if (seq === null) {
        sink.prunedThrough = Number(envelope ?? 0);
        return;
      }
      if (sink.cut || !appendEnvelope(sink, envelope!)) {
        sink.cut = true;
        return;
      }
      sink.lastSeq = Number(seq);
      const stored = Number(storedAt);
      if (sink.oldestStoredAtMs === undefined || stored < sink.oldestStoredAtMs) sink.oldestStoredAtMs = stored;
      if (sink.types) {
        sink.types.push(type!);
        sink.seqs!.push(sink.lastSeq);
        sink.occurredAtMs!.push(occurredAtMs === null || occurredAtMs === undefined ? NaN : Number(occurredAtMs));
      }
    }
  };
  return PageQuery;
}

/** Writes the envelope after the page's others, unless it would take the page past its byte cap (the first always goes in). */
function appendEnvelope(sink: PageSink, envelope: string): boolean {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: only a page near its cap or its buffer's end measures.
  const room = Math.min(sink.scratch.length, sink.maxBytes) - sink.used;
  if (envelope.length * 3 + 1 > room) {
    const needed = sink.used + Buffer.byteLength(envelope) + (sink.count > 0 ? 1 : 0);
    if (needed > sink.maxBytes && sink.count > 0) return false;
    if (needed > sink.scratch.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(needed, Math.min(sink.scratch.length * 2, sink.maxBytes)));
      sink.scratch.copy(bigger, 0, 0, sink.used);
      sink.scratch = bigger;
    }
  }
  if (sink.count++ > 0) sink.scratch[sink.used++] = 0x2c; // ','
  sink.used += sink.scratch.write(envelope, sink.used);
  return true;
}

/** A page statement: (seq, envelope, stored_at[, type, occurred_at_ms]) rows in seq order; prepared once per connection when named. */
export interface PgPageStatement {
  name?: string;
  text: string;
  values: unknown[];
}

/**
 * Runs a page statement on a connection of knex's pool and returns the envelopes joined by commas,
 * as one buffer, stopping before the row that would take it past `maxBytes` (rows after it still
 * arrive, and are dropped as they do: the statements bound how many, pgPageStatement below).
 */
export async function readPgPage(db: Knex, statement: PgPageStatement, maxBytes: number, withFacts = false): Promise<StoredPage> {
  const Query = pageQueryClass();
  const sink: PageSink = {
    scratch: scratchPool.pop() ?? Buffer.allocUnsafeSlow(SCRATCH_BYTES),
    used: 0,
    count: 0,
    lastSeq: undefined,
    prunedThrough: undefined,
    maxBytes,
    cut: false,
    types: withFacts ? [] : undefined,
    occurredAtMs: withFacts ? [] : undefined,
    seqs: withFacts ? [] : undefined,
    oldestStoredAtMs: undefined,
  };
  const connection = (await db.client.acquireConnection()) as PgClient;
  try {
    await new Promise<void>((resolve, reject) => {
      // The callback as last argument: the pool's timeout guard (openPostgresKnex) wraps it.
      connection.query(new Query({ ...statement, values: [...statement.values] }, sink), (err) => (err ? reject(err) : resolve()));
    });
  } finally {
    await db.client.releaseConnection(connection);
  }
  // Only a query that succeeded gives its scratch back: nothing may write into a buffer handed out again.
  const bytes = Buffer.allocUnsafe(sink.used);
  sink.scratch.copy(bytes, 0, 0, sink.used);
  if (sink.scratch.length <= SCRATCH_KEPT_MAX_BYTES && scratchPool.length < SCRATCH_KEPT) scratchPool.push(sink.scratch);
  const page: StoredPage = { bytes, count: sink.count, lastSeq: sink.lastSeq, cutAtByteCap: sink.cut };
  if (sink.prunedThrough !== undefined) page.prunedThrough = sink.prunedThrough;
  if (sink.oldestStoredAtMs !== undefined) page.oldestStoredAtMs = sink.oldestStoredAtMs;
  if (sink.types) page.facts = { types: sink.types, seqs: sink.seqs!, occurredAtMs: sink.occurredAtMs! };
  return page;
}

/** knex's own `?` → `$n` rewriting, as knex.raw does it. */
export const positional = (db: Knex, sql: string): string =>
  (db.client as unknown as { positionBindings(sql: string): string }).positionBindings(sql);

/*
 * The Postgres statements, prepared once per connection. Both are bounded whatever plan the
 * planner picks, so a table it has no statistics for (never analyzed: it then guesses a few hundred
 * rows and may pick a bitmap scan plus a sort) cannot turn a page into a sort of the rest of the feed:
 * - the whole feed: seqs have no holes, so the range afterSeq < seq ≤ afterSeq + limit holds at
 *   most `limit` rows;
 * - a restricted key: per mailbox, the first `limit` events after the cursor from the
 *   (workspace, mailbox, seq) index, merged (Merge Append: it reads about `limit` entries and
 *   rows in all, one more per mailbox), with the mailboxes' retention watermark in the same
 *   snapshot, as a row whose seq is null. The rows come with their entries: joining the merged
 *   seqs back to `events` would let a planner without statistics hash-join every partition.
 */
// Columns after seq and envelope: stored_at (for the age of a page read ahead), then the facts when asked.
const FACT_COLUMNS = (alias: string) => `, ${alias}type, ${alias}occurred_at_ms`;

/** Exported for its test (the plans it gets on a table without statistics). */
export function pgPageStatement(q: PageQuery): PgPageStatement {
  const withFacts = q.withFacts === true;
  if (q.mailboxes === null) {
    return {
      name: `event_feed_page${withFacts ? '_facts' : ''}`,
      text: `SELECT seq, envelope, stored_at${withFacts ? FACT_COLUMNS('') : ''} FROM events
              WHERE workspace_id = $1 AND seq > $2::bigint AND seq <= $2::bigint + $3::int ORDER BY seq LIMIT $3::int`,
      values: [q.workspaceId, q.afterSeq, q.limit],
    };
  }
  const mailboxes = [...new Set(q.mailboxes)];
  const columns = `seq, envelope, stored_at${withFacts ? FACT_COLUMNS('') : ''}`;
  const perMailbox = mailboxes
    .map(
      (_, i) =>
        `SELECT * FROM (SELECT ${columns} FROM events WHERE workspace_id = $1 AND mailbox_id = ($4::text[])[${i + 1}] AND seq > $2::bigint ORDER BY seq LIMIT $3::int) m${i}`,
    )
    .join(' UNION ALL ');
  return {
    name: `event_feed_page_${mailboxes.length}mbx${withFacts ? '_facts' : ''}`,
    text: `SELECT ${columns} FROM (
             SELECT NULL::bigint AS seq,
                    (SELECT MAX(pruned_through) FROM feed_retention_mailboxes WHERE workspace_id = $1 AND mailbox_id = ANY($4::text[]))::text AS envelope,
                    NULL::bigint AS stored_at${withFacts ? ', NULL::text AS type, NULL::bigint AS occurred_at_ms' : ''}
             UNION ALL
             (SELECT ${columns} FROM (${perMailbox}) picked ORDER BY seq LIMIT $3::int)
           ) page ORDER BY seq NULLS FIRST`,
    values: [q.workspaceId, q.afterSeq, q.limit, mailboxes],
  };
}

/** One page of the feed, read now (pageReader adds the read-ahead). */
export const queryPostgresPage = (db: Knex, q: PageQuery): Promise<StoredPage> =>
  readPgPage(db, pgPageStatement(q), PAGE_MAX_BYTES, q.withFacts === true);
