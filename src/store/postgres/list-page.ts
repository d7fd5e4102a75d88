import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import type { PageRead } from '../common/search-session.ts';

/*
 * A list_events page read on Postgres straight into bytes, as queryPostgresPage reads a feed page:
 * each row's envelope is written into a buffer as its DataRow message arrives, so no row object
 * or string outlives its message. A list_events row also carries the event's type and time (the
 * page's facts) and how many candidates the statement found (whether more match than it returns).
 */

interface PgClient {
  query(query: object, callback: (err: Error | null) => void): void;
}

interface PgQueryClass {
  new (config: { text: string; values?: unknown[] }): object;
}

/** What a list page collects while its rows arrive (its `found`: the candidates the statement found, returned or not). */
export type PgListPage = PageRead;

interface Sink {
  scratch: Buffer;
  used: number;
  page: Omit<PgListPage, 'bytes'>;
}

const FIRST_SCRATCH_BYTES = 64 * 1024;

let ListQuery: (new (config: { text: string }, sink: Sink) => object) | undefined;

/** pg's own Query (timeouts, errors, several statements in one message), keeping its rows as bytes. */
function listQueryClass() {
  if (ListQuery) return ListQuery;
  const { Query } = createRequire(import.meta.url)('pg') as { Query: PgQueryClass };
  ListQuery = class extends Query {
    constructor(
      config: { text: string },
      private readonly sink: Sink,
    ) {
      super(config);
    }
    /** Columns: seq, type, occurred_at_ms, found, envelope (text format). Statements without rows (SET) send none. */
    handleDataRow(message: { fields: [string, string, string, string, string] }): void {
      const [seq, type, occurredAtMs, found, envelope] = message.fields;
      const { page } = this.sink;
      append(this.sink, envelope);
      page.types.push(type);
      page.occurredAtMs.push(Number(occurredAtMs));
      page.lastSeq = Number(seq);
      page.found = Number(found);
    }
  };
  return ListQuery;
}

function append(sink: Sink, envelope: string): void {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: only an envelope near the end of the buffer measures.
  if (sink.used + envelope.length * 3 + 1 > sink.scratch.length) {
    const needed = sink.used + Buffer.byteLength(envelope) + 1;
    if (needed > sink.scratch.length) {
      const bigger = Buffer.allocUnsafeSlow(Math.max(needed, sink.scratch.length * 2));
      sink.scratch.copy(bigger, 0, 0, sink.used);
      sink.scratch = bigger;
    }
  }
  if (sink.page.count++ > 0) sink.scratch[sink.used++] = 0x2c; // ','
  sink.used += sink.scratch.write(envelope, sink.used);
}

/**
 * Runs `text` (one or more statements, without parameters: the simple protocol) on a connection
 * of knex's pool, or of the transaction given; the last statement selects (seq, type,
 * occurred_at_ms, found, envelope) in page order.
 */
export async function readPgListPage(db: Knex | Knex.Transaction, text: string): Promise<PgListPage> {
  const Query = listQueryClass();
  const sink: Sink = {
    scratch: Buffer.allocUnsafeSlow(FIRST_SCRATCH_BYTES),
    used: 0,
    page: { count: 0, types: [], occurredAtMs: [], lastSeq: undefined, found: 0 },
  };
  const connection = (await db.client.acquireConnection()) as PgClient;
  try {
    await new Promise<void>((resolve, reject) => {
      // The callback as last argument: the pool's timeout guard (openPostgresKnex) wraps it.
      connection.query(new Query({ text }, sink), (err) => (err ? reject(err) : resolve()));
    });
  } finally {
    await db.client.releaseConnection(connection);
  }
  const bytes = Buffer.allocUnsafe(sink.used);
  sink.scratch.copy(bytes, 0, 0, sink.used);
  return { bytes, ...sink.page };
}
