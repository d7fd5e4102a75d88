import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import type { StoredPage } from './events.ts';

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
  new (config: { text: string; values: unknown[] }): object;
}

/** What a page query collects while its rows arrive. */
interface PageSink {
  scratch: Buffer;
  used: number;
  count: number;
  lastSeq: number | undefined;
  prunedThrough: number | undefined;
}

// Scratch buffers are reused across pages (one per page in flight): a page costs one allocation, its own.
const SCRATCH_BYTES = 512 * 1024;
const SCRATCH_KEPT_MAX_BYTES = 4 * 1024 * 1024;
const SCRATCH_KEPT = 4;
const scratchPool: Buffer[] = [];

let PageQuery: (new (config: { text: string; values: unknown[] }, sink: PageSink) => object) | undefined;

/** pg's own Query (parse, bind, timeouts, errors), keeping its rows as bytes instead of row objects. */
function pageQueryClass() {
  if (PageQuery) return PageQuery;
  const { Query } = createRequire(import.meta.url)('pg') as { Query: PgQueryClass };
  PageQuery = class extends Query {
    constructor(
      config: { text: string; values: unknown[] },
      private readonly sink: PageSink,
    ) {
      super(config);
    }
    /** Columns: seq, envelope (text format); a null seq carries the retention watermark instead (store/events.ts). */
    handleDataRow(message: { fields: [string | null, string | null] }): void {
      const [seq, envelope] = message.fields;
      if (seq === null) {
        this.sink.prunedThrough = Number(envelope ?? 0);
        return;
      }
      appendEnvelope(this.sink, envelope!);
      this.sink.lastSeq = Number(seq);
    }
  };
  return PageQuery;
}

function appendEnvelope(sink: PageSink, envelope: string): void {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: only a page near the end of its buffer measures.
  const room = sink.scratch.length - sink.used;
  if (envelope.length * 3 + 1 > room) {
    const needed = sink.used + Buffer.byteLength(envelope) + 1;
    if (needed > sink.scratch.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(needed, sink.scratch.length * 2));
      sink.scratch.copy(bigger, 0, 0, sink.used);
      sink.scratch = bigger;
    }
  }
  if (sink.count++ > 0) sink.scratch[sink.used++] = 0x2c; // ','
  sink.used += sink.scratch.write(envelope, sink.used);
}

/**
 * Runs a page statement selecting (seq, envelope) in seq order on a connection of knex's pool and
 * returns the envelopes joined by commas, as one buffer.
 */
export async function readPgPage(db: Knex, sql: string, bindings: readonly Knex.Value[]): Promise<StoredPage> {
  const Query = pageQueryClass();
  const sink: PageSink = { scratch: scratchPool.pop() ?? Buffer.allocUnsafeSlow(SCRATCH_BYTES), used: 0, count: 0, lastSeq: undefined, prunedThrough: undefined };
  // knex's own `?` → `$n` rewriting, as knex.raw does it.
  const text = (db.client as unknown as { positionBindings(sql: string): string }).positionBindings(sql);
  const connection = (await db.client.acquireConnection()) as PgClient;
  try {
    await new Promise<void>((resolve, reject) => {
      // The callback as last argument: the pool's timeout guard (store/db.ts) wraps it.
      connection.query(new Query({ text, values: [...bindings] }, sink), (err) => (err ? reject(err) : resolve()));
    });
  } finally {
    await db.client.releaseConnection(connection);
  }
  // Only a query that succeeded gives its scratch back: nothing may write into a buffer handed out again.
  const bytes = Buffer.allocUnsafe(sink.used);
  sink.scratch.copy(bytes, 0, 0, sink.used);
  if (sink.scratch.length <= SCRATCH_KEPT_MAX_BYTES && scratchPool.length < SCRATCH_KEPT) scratchPool.push(sink.scratch);
  return { bytes, count: sink.count, lastSeq: sink.lastSeq, ...(sink.prunedThrough === undefined ? {} : { prunedThrough: sink.prunedThrough }) };
}
