import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import type { StoredPage } from './feed-page.ts';

/*
 * A feed page read on Postgres straight into bytes. pg decodes every field of every row into a
 * string and keeps the rows until the query ends; on a page of 500 that is ~1 MB of young objects
 * that outlive a scavenge or two, are promoted, and fill the old generation: under the service's
 * heap bounds, with a live heap the service's size, a page of 500 cost 3.1–4.0 ms of CPU, mostly
 * major GC, against 0.8–1.0 ms read this way (bench/README.md). Here each row's envelope is written
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
     * null seq carries the retention watermark instead (store/feed-page.ts).
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
 * arrive, and are dropped as they do: the statements bound how many, store/feed-page.ts).
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
    oldestStoredAtMs: undefined,
  };
  const connection = (await db.client.acquireConnection()) as PgClient;
  try {
    await new Promise<void>((resolve, reject) => {
      // The callback as last argument: the pool's timeout guard (store/db.ts) wraps it.
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
  if (sink.types) page.facts = { types: sink.types, occurredAtMs: sink.occurredAtMs! };
  return page;
}

/** knex's own `?` → `$n` rewriting, as knex.raw does it. */
export const positional = (db: Knex, sql: string): string => (db.client as unknown as { positionBindings(sql: string): string }).positionBindings(sql);
