import type { Knex } from 'knex';
import { PAGE_MAX_BYTES } from '../limits/page-bytes.ts';
import { dbKind, sqliteReaderOf, type Db } from './db.ts';
import { readPgPage, type PgPageStatement } from './pg-page.ts';
import { ReadAhead } from './read-ahead.ts';
import { placeholders, readRows } from './sql.ts';
import { connectionOf } from './sqlite-append.ts';
import type { SqliteConnection } from './sqlite-connection.ts';
import { readSqlitePage } from './sqlite-page.ts';

export interface PageQuery {
  workspaceId: string;
  afterSeq: number;
  limit: number;
  /** null: every event; otherwise only events of these mailboxes (events without a mailbox excluded). */
  mailboxes: readonly string[] | null;
  /** Also return each event's type and occurred_at (for a text about the page, without parsing it). */
  withFacts?: boolean;
}

/** What a person is told of a page's events without parsing them: per event, in page order. */
export interface EventFacts {
  types: string[];
  /** occurred_at in epoch milliseconds (NaN for an event stored before the column existed). */
  occurredAtMs: number[];
}

/**
 * A page of the feed as stored: the envelopes' JSON text in seq order, joined by commas, as one
 * UTF-8 buffer. Nothing is parsed: the bytes go to the client as they were stored.
 */
export interface StoredPage {
  /** `envelope,envelope,…` (empty when the page is). */
  bytes: Buffer;
  count: number;
  /** Seq of the page's last event; undefined when the page is empty. */
  lastSeq: number | undefined;
  /**
   * The page stopped before `limit` events because the next one would have taken it past the
   * byte cap: more events follow now, although the page is short.
   */
  cutAtByteCap: boolean;
  /**
   * For a restricted key's page on Postgres: the retention watermark of its mailboxes, read in the
   * page's own snapshot (feed/expiry.ts), which saves a round trip per page.
   */
  prunedThrough?: number;
  facts?: EventFacts;
  /** The earliest stored_at (epoch ms) among the page's events; undefined when the page is empty. */
  oldestStoredAtMs?: number;
  /**
   * Read ahead of its request (store/read-ahead.ts): unless its events are too recent for any
   * prune (feed/expiry.ts), it proves nothing about what retention removed since.
   */
  prefetched?: boolean;
}

/** Whether no later read can give this page more events: it holds `limit` events, or stopped at the byte cap. */
export const isWhole = (page: StoredPage, limit: number): boolean => page.count === limit || page.cutAtByteCap;

const readAheads = new WeakMap<object, ReadAhead>();

/**
 * One page of the feed by keyset: seq > afterSeq, in seq order, at most `limit` events and at most
 * PAGE_MAX_BYTES of them (always at least one). The work is bounded by the page, whatever the
 * workspace holds and whatever the database's statistics say (see the statements below and
 * store/sqlite-page.ts). Outside a transaction, a reader catching up gets the next page read ahead
 * (store/read-ahead.ts).
 */
export async function readPage(db: Db | Knex.Transaction, q: PageQuery): Promise<StoredPage> {
  if ((db as Knex.Transaction).isTransaction) return queryPage(db, q);
  let ahead = readAheads.get(db);
  if (!ahead) readAheads.set(db, (ahead = new ReadAhead((next) => queryPage(db, next))));
  const page = (await ahead.take(q)) ?? (await queryPage(db, q));
  if (isWhole(page, q.limit) && q.limit > 1) ahead.schedule({ ...q, afterSeq: page.lastSeq! });
  return page;
}

async function queryPage(db: Db | Knex.Transaction, q: PageQuery): Promise<StoredPage> {
  if (q.mailboxes !== null && q.mailboxes.length === 0) return { bytes: Buffer.alloc(0), count: 0, lastSeq: undefined, cutAtByteCap: false };
  if (dbKind(db as Db) === 'sqlite') return onSqliteConnection(db, (conn) => readSqlitePage(conn, q, PAGE_MAX_BYTES));
  return readPgPage(db as Db, pgPageStatement(q), PAGE_MAX_BYTES, q.withFacts === true);
}

/** Runs a synchronous read on the read connection (outside transactions), or on the transaction's own. */
async function onSqliteConnection<T>(db: Db | Knex.Transaction, read: (conn: SqliteConnection) => T): Promise<T> {
  const reader = sqliteReaderOf(db);
  if (reader) return read(reader.connection());
  if ((db as Knex.Transaction).isTransaction) return read(await connectionOf(db as Knex.Transaction));
  // An in-memory database lives on knex's one connection only.
  const client = db.client as { acquireConnection(): Promise<SqliteConnection>; releaseConnection(conn: SqliteConnection): Promise<unknown> };
  const conn = await client.acquireConnection();
  try {
    return read(conn);
  } finally {
    await client.releaseConnection(conn);
  }
}

/*
 * The Postgres statements, prepared once per connection. Both are bounded whatever plan the
 * planner picks, so a table it has no statistics for (never analyzed: it then guesses a few hundred
 * rows and may pick a bitmap scan plus a sort) cannot turn a page into a sort of the rest of the feed:
 * - the whole feed: seqs have no holes, so the range afterSeq < seq ≤ afterSeq + limit holds at
 *   most `limit` rows;
 * - a restricted key: per mailbox, the first `limit` seqs after the cursor from the
 *   (workspace, mailbox, seq) index, merged (Merge Append: it reads about `limit` entries in all),
 *   with the mailboxes' retention watermark in the same snapshot, as a row whose seq is null.
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
  const perMailbox = mailboxes
    .map((_, i) => `SELECT seq FROM (SELECT seq FROM events WHERE workspace_id = $1 AND mailbox_id = ($4::text[])[${i + 1}] AND seq > $2::bigint ORDER BY seq LIMIT $3::int) m${i}`)
    .join(' UNION ALL ');
  return {
    name: `event_feed_page_${mailboxes.length}mbx${withFacts ? '_facts' : ''}`,
    text: `SELECT seq, envelope, stored_at${withFacts ? FACT_COLUMNS('') : ''} FROM (
             SELECT NULL::bigint AS seq,
                    (SELECT MAX(pruned_through) FROM feed_retention_mailboxes WHERE workspace_id = $1 AND mailbox_id = ANY($4::text[]))::text AS envelope,
                    NULL::bigint AS stored_at${withFacts ? ', NULL::text AS type, NULL::bigint AS occurred_at_ms' : ''}
             UNION ALL
             (SELECT e.seq, e.envelope, e.stored_at${withFacts ? FACT_COLUMNS('e.') : ''}
                FROM (${perMailbox} ORDER BY seq LIMIT $3::int) picked
                JOIN events e ON e.workspace_id = $1 AND e.seq = picked.seq)
           ) page ORDER BY seq NULLS FIRST`,
    values: [q.workspaceId, q.afterSeq, q.limit, mailboxes],
  };
}

export interface StoredEvent {
  seq: number;
  envelope: string;
}

/** The same events as rows, one per event, with its seq, no byte cap: for the readers that need events apart (tests, tools). */
export async function readPageRows(db: Db | Knex.Transaction, q: PageQuery): Promise<StoredEvent[]> {
  if (q.mailboxes !== null && q.mailboxes.length === 0) return [];
  const filter = q.mailboxes === null ? '' : ` AND mailbox_id IN (${placeholders(q.mailboxes.length)})`;
  return readRows<StoredEvent>(db, `SELECT seq, envelope FROM events WHERE workspace_id = ?${filter} AND seq > ? ORDER BY seq LIMIT ?`, [
    q.workspaceId,
    ...(q.mailboxes ?? []),
    q.afterSeq,
    q.limit,
  ]);
}
