import type { Knex } from 'knex';
import type { WorkspaceAppend } from './events.ts';
import { placeholders } from './sql.ts';

/**
 * An append on Postgres as one statement: move the workspaces' counters, insert their events at
 * the seqs that gives, write the webhook deliveries those events owe to their workspaces' enabled
 * endpoints (the outbox) and notify the new heads. One round trip instead of five, and, being one
 * statement, atomic even outside a transaction, which lets the group commit run it without BEGIN
 * and COMMIT (bench/README.md, changes 12 and 13).
 *
 * The ordering argument of appendEvents holds unchanged: the counter rows are locked (in workspace
 * order) by the statement's first step and kept until it commits, so seqs are handed out in commit
 * order. All parts of a statement run on one snapshot, but the UPDATE of a row that another
 * transaction changed meanwhile waits for it and then works on the committed row (READ COMMITTED's
 * re-check), which is what gives each transaction the counter its predecessor left.
 */
export function pgAppendStatement(
  sorted: WorkspaceAppend[],
  storedAt: number,
  notifyChannel: string,
): { sql: string; bindings: Knex.Value[] } {
  const bindings: Knex.Value[] = [];
  let bump: string;
  if (sorted.length === 1) {
    bump = `bumped AS (
      UPDATE feed_counters SET last_seq = last_seq + ?::bigint WHERE workspace_id = ? RETURNING workspace_id, last_seq, ?::bigint AS k
    )`;
    bindings.push(sorted[0]!.events.length, sorted[0]!.workspaceId, sorted[0]!.events.length);
  } else {
    // Postgres locks the rows of a multi-row UPDATE in scan order: lock them in workspace order first.
    bump = `locked AS MATERIALIZED (
      SELECT workspace_id FROM feed_counters WHERE workspace_id IN (${placeholders(sorted.length)}) ORDER BY workspace_id FOR UPDATE
    ), bumped AS (
      UPDATE feed_counters c SET last_seq = c.last_seq + v.k
        FROM (VALUES ${sorted.map(() => '(?::text, ?::bigint)').join(', ')}) AS v(workspace_id, k), locked
       WHERE c.workspace_id = v.workspace_id AND locked.workspace_id = c.workspace_id
      RETURNING c.workspace_id, c.last_seq, v.k
    )`;
    bindings.push(...sorted.map((a) => a.workspaceId), ...sorted.flatMap((a) => [a.workspaceId, a.events.length]));
  }

  const rows: string[] = [];
  bindings.push(storedAt);
  for (const { workspaceId, events } of sorted) {
    events.forEach((event, i) => {
      rows.push('(?::text, ?::bigint, ?::text, ?::text, ?::text, ?::bigint, ?::text, ?::text)');
      bindings.push(workspaceId, i + 1, event.id, event.type, event.mailboxId, event.occurredAtMs, event.idempotencyHash, event.envelope);
    });
  }
  const insert = `inserted AS (
    INSERT INTO events (workspace_id, seq, id, type, mailbox_id, occurred_at_ms, stored_at, idempotency_hash, envelope)
    SELECT r.workspace_id, b.last_seq - b.k + r.ord, r.id, r.type, r.mailbox_id, r.occurred_at_ms, ?::bigint, r.idempotency_hash, r.envelope
      FROM (VALUES ${rows.join(', ')}) AS r(workspace_id, ord, id, type, mailbox_id, occurred_at_ms, idempotency_hash, envelope)
      JOIN bumped b ON b.workspace_id = r.workspace_id
    RETURNING workspace_id, seq, id, type
  )`;

  // The deliveries owed: one per (enabled endpoint of the event's workspace, event of a type it
  // takes). Filters are exact types or prefixes ending in `.*`, [] takes every type: the rule of
  // matchesTypes (feed/type-filter.ts), which SQLite applies in process; the webhook tests hold
  // both to it. Emitted types are the contract's, so a prefix matches exactly what it expands to.
  const deliveries = `, outbox AS (
    INSERT INTO webhook_deliveries (endpoint_id, workspace_id, event_seq, event_id, attempts, next_attempt_at, created_at)
    SELECT w.id, i.workspace_id, i.seq, i.id, 0, ?::bigint, ?::bigint
      FROM inserted i JOIN webhook_endpoints w ON w.workspace_id = i.workspace_id AND w.enabled
     WHERE json_array_length(w.event_types::json) = 0 OR EXISTS (
       SELECT 1 FROM json_array_elements_text(w.event_types::json) AS f(filter)
        WHERE f.filter = i.type OR (f.filter LIKE '%.*' AND starts_with(i.type, left(f.filter, -1))))
  )`;
  bindings.push(storedAt, storedAt);

  // Data-modifying parts run to completion whether or not the final SELECT reads them.
  const sql = `WITH ${bump}, ${insert}${deliveries}
    SELECT workspace_id, last_seq, k, pg_notify('${notifyChannel}', workspace_id || ' ' || last_seq) FROM bumped`;
  return { sql, bindings };
}
