import type { Knex } from 'knex';
import { idsToLookUp, inWorkspaceOrder } from '../common/events.ts';
import { deliveriesOwed } from '../common/outbox.ts';
import type { FirstSeqs, SortOutStored, StoredIdRow, WorkspaceAppend } from '../port.ts';
import type { SqliteConnection } from './connection.ts';

/*
 * The SQLite append, run synchronously on the writing connection. better-sqlite3 is synchronous
 * anyway; going through knex added, per group commit, a transaction object (knex defines ~100
 * properties on each) and a query builder or raw query per statement, all garbage, a large share
 * of what the server allocated while tailing. Statements are the
 * connection's prepared ones (configureSqlite keeps them).
 */
const STORED_BY_ID = 'SELECT workspace_id, id, envelope FROM events WHERE workspace_id = ? AND id = ?';
// The counter also keeps the workspace's newest stored_at (migration 010): the events get
// MAX(it, the clock's), so stored_at never goes down along a workspace's seqs, even when this
// process read its clock before waiting for another process's write lock (feed_cursor's search
// relies on that order: positionAt).
const BUMP_COUNTER =
  'UPDATE feed_counters SET last_seq = last_seq + ?, last_stored_at = MAX(last_stored_at, ?) WHERE workspace_id = ? RETURNING last_seq, last_stored_at';
const INSERT_EVENT =
  'INSERT INTO events (workspace_id, seq, id, type, mailbox_id, occurred_at_ms, stored_at, envelope) VALUES (?, ?, ?, ?, ?, ?, ?, ?)';
const ENABLED_ENDPOINTS = 'SELECT id, workspace_id, event_types FROM webhook_endpoints WHERE workspace_id = ? AND enabled = 1';
const INSERT_DELIVERY =
  'INSERT INTO webhook_deliveries (endpoint_id, workspace_id, event_seq, event_id, attempts, next_attempt_at, created_at, trace_context) VALUES (?, ?, ?, ?, 0, ?, ?, ?)';

/**
 * Runs `work` in one transaction on the database's writing connection, which no other query of
 * this process uses meanwhile (knex's pool of one lends it like for a knex transaction). BEGIN
 * IMMEDIATE takes the write lock first, waiting for other processes' writers (busy_timeout), so a
 * transaction that reads before it writes is never refused the lock half-way. A throw rolls back.
 */
export async function inSqliteWriteTransaction<T>(db: Knex, work: (conn: SqliteConnection) => T): Promise<T> {
  const client = db.client as {
    acquireConnection(): Promise<SqliteConnection>;
    releaseConnection(conn: SqliteConnection): Promise<unknown>;
  };
  const conn = await client.acquireConnection();
  try {
    return conn.transaction(() => work(conn)).immediate();
  } finally {
    await client.releaseConnection(conn);
  }
}

/** The connection a knex transaction on SQLite runs on (its client lends only that one). */
export async function connectionOf(trx: Knex.Transaction): Promise<SqliteConnection> {
  return (await (trx.client as { acquireConnection(): Promise<SqliteConnection> }).acquireConnection()) as SqliteConnection;
}

/**
 * Store.append on SQLite, synchronously, inside a transaction open on `conn`: the stored ids
 * looked up, `sortOut` told, the rest appended. Nothing else runs on the connection meanwhile.
 */
export function appendOnSqlite(conn: SqliteConnection, appends: WorkspaceAppend[], storedAt: number, sortOut: SortOutStored): FirstSeqs {
  const fresh = sortOut(sqliteStoredByIds(conn, idsToLookUp(appends)));
  return fresh.length > 0 ? sqliteAppendEvents(conn, inWorkspaceOrder(fresh), storedAt) : new Map();
}

/** The stored events among these client-supplied ids (idempotency), by the (workspace_id, id) unique index. */
export function sqliteStoredByIds(conn: SqliteConnection, wanted: Array<{ workspaceId: string; ids: string[] }>): StoredIdRow[] {
  const statement = conn.prepare(STORED_BY_ID);
  const rows: StoredIdRow[] = [];
  for (const { workspaceId, ids } of wanted) {
    for (const id of ids) {
      const row = statement.get(workspaceId, id) as StoredIdRow | undefined;
      if (row) rows.push(row);
    }
  }
  return rows;
}

/**
 * The append on SQLite (the write path's notes beside inWorkspaceOrder give the ordering argument): inside the caller's
 * transaction, each workspace's counter moved, its events inserted at the seqs that gives, and
 * the webhook deliveries they owe written with them. `sorted` is in workspace order.
 */
export function sqliteAppendEvents(conn: SqliteConnection, sorted: WorkspaceAppend[], storedAt: number): Map<string, number> {
  const bump = conn.prepare(BUMP_COUNTER);
  const insertEvent = conn.prepare(INSERT_EVENT);
  const endpointsOf = conn.prepare(ENABLED_ENDPOINTS);
  const firstSeqs = new Map<string, number>();
  const deliveries: Array<[string, string, number, string, string | null]> = [];
  for (const { workspaceId, events } of sorted) {
    const row = bump.get(events.length, storedAt, workspaceId) as
      { last_seq: number | bigint; last_stored_at: number | bigint } | undefined;
    if (!row) throw new Error(`workspace ${workspaceId} has no feed counter`);
    const firstSeq = Number(row.last_seq) - events.length + 1;
    const eventsStoredAt = Number(row.last_stored_at);
    firstSeqs.set(workspaceId, firstSeq);
    events.forEach((event, i) => {
      insertEvent.run(workspaceId, firstSeq + i, event.id, event.type, event.mailboxId, event.occurredAtMs, eventsStoredAt, event.envelope);
    });
    const endpoints = endpointsOf.all(workspaceId) as Array<{ id: string; workspace_id: string; event_types: string }>;
    if (endpoints.length === 0) continue;
    const seqOf = new Map(events.map((event, i) => [event.id, firstSeq + i]));
    const traceOf = new Map(events.map((event) => [event.id, event.traceContext ?? null]));
    for (const owed of deliveriesOwed(
      endpoints,
      events.map((event) => ({ workspaceId, id: event.id, type: event.type })),
    )) {
      deliveries.push([owed.endpointId, owed.workspaceId, seqOf.get(owed.eventId)!, owed.eventId, traceOf.get(owed.eventId)!]);
    }
  }
  if (deliveries.length > 0) {
    const insertDelivery = conn.prepare(INSERT_DELIVERY);
    for (const [endpointId, workspaceId, seq, eventId, traceContext] of deliveries)
      insertDelivery.run(endpointId, workspaceId, seq, eventId, storedAt, storedAt, traceContext);
  }
  return firstSeqs;
}
