import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { WebhookAttempt } from '../../../generated/types.ts';
import type { AttemptHealth, AttemptRecord, DueDelivery, EndpointRow, LeaseRequest } from '../port.ts';
import type { SqlPieces } from './sql.ts';

type Db = Knex;
type Reader = Knex | Knex.Transaction;
const iso = (ms: number | string) => new Date(Number(ms)).toISOString();

/** An endpoint row as the port gives it: `enabled` a boolean, whatever the column holds (SQLite: 0 or 1). */
const endpointOf = <Row extends { enabled: unknown }>(row: Row): Row & { enabled: boolean } => ({ ...row, enabled: Boolean(row.enabled) });

export const findEndpoint = async (db: Reader, workspaceId: string, url: string): Promise<EndpointRow | undefined> => {
  const row = await db('webhook_endpoints').where({ workspace_id: workspaceId, url }).first();
  return row === undefined ? undefined : endpointOf(row);
};

export const listEndpoints = async (db: Reader, workspaceId: string): Promise<EndpointRow[]> =>
  (await db('webhook_endpoints').where({ workspace_id: workspaceId }).orderBy('created_at').orderBy('id')).map(endpointOf);

/*
 * Which endpoints to lease, fairly. Every enabled endpoint with no live lease and a delivery due
 * takes a turn in its workspace: the slots this owner already holds for the workspace, plus the
 * endpoint's rank among the workspace's candidates (least recently leased first, then oldest due).
 * Turns are served in order, and among equal turns the workspace served least recently goes first
 * (then the oldest due delivery); no turn past the per-workspace cap is served. So free slots go
 * round-robin over workspaces, then over each workspace's endpoints: a workspace with many
 * endpoints always due, or with a large old backlog, cannot keep every slot while another waits.
 * Each candidate's earliest due time is one probe of the (endpoint_id, next_attempt_at) index: the
 * statement costs a pass over the endpoints, however many deliveries are pending.
 */
const PICK_ENDPOINTS = `
  WITH workspaces_now AS (
    SELECT workspace_id,
           SUM(CASE WHEN lease_owner = ? AND lease_until >= ? THEN 1 ELSE 0 END) AS held,
           COALESCE(MAX(last_leased_at), 0) AS served_at
      FROM webhook_endpoints
     GROUP BY workspace_id
  ), candidates AS (
    SELECT e.id, e.workspace_id, COALESCE(e.last_leased_at, 0) AS leased_at,
           (SELECT MIN(d.next_attempt_at) FROM webhook_deliveries d WHERE d.endpoint_id = e.id) AS due_at
      FROM webhook_endpoints e
     WHERE e.enabled = ? AND (e.lease_until IS NULL OR e.lease_until < ?)
  ), turns AS (
    SELECT c.id, c.due_at, w.served_at,
           w.held + ROW_NUMBER() OVER (PARTITION BY c.workspace_id ORDER BY c.leased_at, c.due_at, c.id) AS turn
      FROM candidates c JOIN workspaces_now w ON w.workspace_id = c.workspace_id
     WHERE c.due_at <= ?
  )
  SELECT id FROM turns WHERE turn <= ? ORDER BY turn, served_at, due_at, id LIMIT ?`;

/**
 * Leases up to `max` endpoints that have deliveries due and no live lease, chosen by
 * PICK_ENDPOINTS. On Postgres the chosen rows are locked with FOR UPDATE SKIP LOCKED and checked
 * again, so instances racing for work each take different endpoints without waiting; the lease
 * then keeps an endpoint to one instance while it sends, so no attempt goes out twice. A crashed
 * instance's lease simply runs out.
 */
export async function leaseEndpoints(db: Db, sql: SqlPieces, request: LeaseRequest): Promise<EndpointRow[]> {
  const { owner, now, leaseMs, max, perWorkspace } = request;
  const leased = await sql.rows<EndpointRow & { enabled: boolean | number }>(
    db,
    `UPDATE webhook_endpoints SET lease_owner = ?, lease_until = ?, last_leased_at = ?
      WHERE id IN (
        SELECT e.id FROM webhook_endpoints e
         WHERE e.id IN (SELECT id FROM (${PICK_ENDPOINTS}) picked)
           AND e.enabled = ? AND (e.lease_until IS NULL OR e.lease_until < ?)
         ${sql.skipLocked})
      RETURNING id, workspace_id, url, event_types, enabled, disabled_reason, disabled_at, secret, previous_secret, previous_secret_expires_at, last_tested_at, created_at, updated_at`,
    [owner, now + leaseMs, now, owner, now, true, now, now, perWorkspace, max, true, now],
  );
  return leased.map(endpointOf);
}

/** Extends a lease this owner holds; false when it was lost (expired and taken by another instance). */
export async function renewLease(db: Db, endpointId: string, owner: string, until: number): Promise<boolean> {
  return (await db('webhook_endpoints').where({ id: endpointId, lease_owner: owner }).update({ lease_until: until })) > 0;
}

/**
 * Gives an endpoint back. With `pauseUntil`, no instance leases it again before then: after a
 * failed attempt, its later deliveries wait rather than follow at once.
 */
export async function releaseLease(db: Db, endpointId: string, owner: string, pauseUntil: number | null = null): Promise<void> {
  await db('webhook_endpoints').where({ id: endpointId, lease_owner: owner }).update({ lease_owner: null, lease_until: pauseUntil });
}

/**
 * An endpoint's due deliveries, oldest event first, with the stored envelope text (null if pruned).
 * Read in the (endpoint_id, event_seq) index's order, so a lease reads `max` rows whatever the
 * backlog. SQLite would rather range over (endpoint_id, next_attempt_at) and sort every due row
 * (tens of milliseconds of a blocked event loop for a backlog of 100,000): the unary `+` keeps it
 * from using next_attempt_at for the search (SqlPieces.notIndexed).
 */
export async function dueDeliveries(db: Db, sql: SqlPieces, endpointId: string, now: number, max: number): Promise<DueDelivery[]> {
  return db('webhook_deliveries as d')
    .leftJoin('events as e', function () {
      this.on('e.workspace_id', '=', 'd.workspace_id').andOn('e.seq', '=', 'd.event_seq');
    })
    .select(
      'd.id',
      'd.endpoint_id',
      'd.workspace_id',
      'd.event_seq',
      'd.event_id',
      'd.attempts',
      'd.created_at',
      'd.trace_context',
      'e.envelope',
    )
    .where('d.endpoint_id', endpointId)
    .andWhereRaw(`${sql.notIndexed}d.next_attempt_at <= ?`, [now])
    .orderBy('d.event_seq')
    .limit(max);
}

/**
 * Records an attempt and moves its delivery on (done, rescheduled, dropped or kept for a disabled
 * endpoint), in one transaction, disabling the endpoint when the record says so. Only the
 * statement that turns an enabled endpoint off reports `disabled`, so it is reported once.
 */
export async function recordAttempt(db: Db, record: AttemptRecord): Promise<{ disabled: boolean }> {
  const { delivery } = record;
  return db.transaction(async (trx) => {
    await trx('webhook_attempts').insert({
      endpoint_id: delivery.endpoint_id,
      event_id: delivery.event_id,
      attempt: delivery.attempts + 1,
      started_at: record.startedAt,
      status: record.status,
      latency_ms: record.latencyMs,
      error: record.error,
      outcome: record.outcome,
      next_retry_at: record.outcome === 'retry' ? record.nextAttemptAt : null,
    });
    if (record.outcome === 'retry') {
      await trx('webhook_deliveries')
        .where({ id: delivery.id })
        .update({ attempts: delivery.attempts + 1, next_attempt_at: record.nextAttemptAt });
    } else if (record.outcome !== 'disabled') {
      // A delivery that disabled its endpoint is kept, not counted: delivered if an admin re-enables it.
      await trx('webhook_deliveries').where({ id: delivery.id }).del();
    }
    if (!record.disable) return { disabled: false };
    const { reason, unlessDeliveredSince } = record.disable;
    if (unlessDeliveredSince !== undefined) {
      // Read through the (endpoint_id, id) index: at most the attempts kept per endpoint.
      const delivered = await trx('webhook_attempts')
        .where({ endpoint_id: delivery.endpoint_id, outcome: 'delivered' })
        .andWhere('started_at', '>=', unlessDeliveredSince)
        .first('id');
      if (delivered) return { disabled: false };
    }
    const changed = await trx('webhook_endpoints')
      .where({ id: delivery.endpoint_id, enabled: true })
      .update({ enabled: false, disabled_reason: reason, disabled_at: record.startedAt, updated_at: record.startedAt });
    return { disabled: changed > 0 };
  });
}

/** How many of the endpoint's last `window` attempts there are, and how many delivered: `window` index entries at most. */
export async function attemptHealth(db: Reader, sql: SqlPieces, endpointId: string, window: number): Promise<AttemptHealth> {
  const [row] = await sql.rows<{ attempts: number | string; delivered: number | string | null }>(
    db,
    `SELECT COUNT(*) AS attempts, SUM(CASE WHEN outcome = 'delivered' THEN 1 ELSE 0 END) AS delivered
       FROM (SELECT outcome FROM webhook_attempts WHERE endpoint_id = ? ORDER BY id DESC LIMIT ?) last_attempts`,
    [endpointId, window],
  );
  return { attempts: Number(row?.attempts ?? 0), delivered: Number(row?.delivered ?? 0) };
}

/**
 * test_webhook's cooldown, per workspace and URL (whatever endpoint row holds the URL now): one
 * conditional upsert claims the slot, so instances racing on it agree. The workspace's rows past
 * their cooldown go first: the table holds only what was tested in the last `cooldownMs`.
 */
export async function claimTestSlot(
  db: Db,
  sql: SqlPieces,
  workspaceId: string,
  url: string,
  now: number,
  cooldownMs: number,
): Promise<{ claimed: true } | { claimed: false; waitMs: number }> {
  const urlSha256 = createHash('sha256').update(url).digest('hex');
  await db('webhook_test_cooldowns')
    .where({ workspace_id: workspaceId })
    .andWhere('tested_at', '<=', now - cooldownMs)
    .delete();
  const claimed = await sql.rows<{ tested_at: number | string }>(
    db,
    `INSERT INTO webhook_test_cooldowns (workspace_id, url_sha256, tested_at) VALUES (?, ?, ?)
     ON CONFLICT (workspace_id, url_sha256) DO UPDATE SET tested_at = excluded.tested_at
      WHERE webhook_test_cooldowns.tested_at <= ?
     RETURNING tested_at`,
    [workspaceId, urlSha256, now, now - cooldownMs],
  );
  if (claimed.length > 0) return { claimed: true };
  const row: { tested_at: number | string } | undefined = await db('webhook_test_cooldowns')
    .where({ workspace_id: workspaceId, url_sha256: urlSha256 })
    .first('tested_at');
  return { claimed: false, waitMs: Math.max(1, Number(row?.tested_at ?? now) + cooldownMs - now) };
}

/** An endpoint's pending deliveries, counted up to `max` (the count stops there: it reads at most that many index entries). */
export async function pendingCountUpTo(db: Reader, sql: SqlPieces, endpointId: string, max: number): Promise<number> {
  const [row] = await sql.rows<{ n: number | string }>(
    db,
    'SELECT COUNT(*) AS n FROM (SELECT 1 FROM webhook_deliveries WHERE endpoint_id = ? LIMIT ?) pending',
    [endpointId, max],
  );
  return Number(row?.n ?? 0);
}

/**
 * Queues these events for one endpoint, due now, skipping those already pending for it (the
 * unique (endpoint_id, event_seq) index); returns how many were queued.
 */
export async function queueDeliveries(
  trx: Knex.Transaction,
  endpointId: string,
  workspaceId: string,
  events: Array<{ seq: number; id: string }>,
  now: number,
): Promise<number> {
  let queued = 0;
  for (let i = 0; i < events.length; i += 500) {
    const rows = events.slice(i, i + 500).map((event) => ({
      endpoint_id: endpointId,
      workspace_id: workspaceId,
      event_seq: Number(event.seq),
      event_id: event.id,
      attempts: 0,
      next_attempt_at: now,
      created_at: now,
    }));
    const inserted = await trx('webhook_deliveries').insert(rows).onConflict(['endpoint_id', 'event_seq']).ignore().returning('id');
    queued += inserted.length;
  }
  return queued;
}

export async function pendingCount(db: Reader, endpointId: string): Promise<number> {
  const row = await db('webhook_deliveries').count({ n: '*' }).where({ endpoint_id: endpointId }).first();
  return Number(row?.n ?? 0);
}

export async function recentAttempts(db: Reader, endpointId: string, max = 20): Promise<WebhookAttempt[]> {
  const rows = await db('webhook_attempts').where({ endpoint_id: endpointId }).orderBy('id', 'desc').limit(max);
  return rows.map((row) => ({
    event_id: row.event_id,
    attempt: Number(row.attempt),
    started_at: iso(row.started_at),
    status: row.status === null ? null : Number(row.status),
    latency_ms: Number(row.latency_ms),
    error: row.error,
    outcome: row.outcome,
    next_retry_at: row.next_retry_at === null ? null : iso(row.next_retry_at),
  }));
}
