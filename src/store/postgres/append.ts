import type { Knex } from 'knex';
import { findByIds, idsToLookUp, inWorkspaceOrder, onlyAsked } from '../common/events.ts';
import { placeholders } from '../common/sql.ts';
import { postgresRows, preparedRows, type PgStatement } from './rows.ts';
import { provesRollback, sqlState } from './write-outcome.ts';
import { OutcomeUnknown } from '../port/outcome-unknown.ts';
import type { AppendOptions, FirstSeqs, SortOutStored, StoredIdRow, WorkspaceAppend } from '../port.ts';

/** Store.append's options, and the caller's own transaction to append inside (postgresKind.appendInTransaction). */
export type PostgresAppendOptions = AppendOptions & { trx?: Knex.Transaction };
import { sqlWeekOf, type EventPartitions } from './partitions.ts';

/** SQLSTATE of event_feed_append_crosses_week() (migration 009). */
const CROSSES_WEEK = 'EF001';

/**
 * Store.append on Postgres: two statements whatever the number of workspaces, the stored ids (only
 * when the client gave ids) and the append (counters, events, webhook deliveries, the heads'
 * notification on `notifyChannel`). Outside a transaction the append commits by itself, so when
 * it fails in a way that does not prove it rolled back (the connection lost, the client's query
 * timeout: the commit may have happened) this throws OutcomeUnknown (provesRollback).
 * With skipLocked, the workspaces whose counter row another transaction holds are left out of the
 * answer: none of their events was appended.
 *
 * Client ids stay unique per workspace across partitions (EventPartitions). Each
 * partition's unique index catches a concurrent append of the same id in the same partition, as
 * one unpartitioned table would. A duplicate in an older partition is either committed before
 * the lookup, which finds it, or after: then it was stored at or after the newest stored_at the
 * lookup saw for the workspace (stored_at never goes down, migration 009), so when this append's
 * stored_at is of that same week, the duplicate is in this append's partition and its index
 * catches it. Otherwise (once per workspace and week) the statement refuses to run
 * (CROSSES_WEEK) and the append is made again with the counters locked first, so the lookup then
 * sees every committed event and no other writer of those workspaces can commit until it ends.
 * Inside a caller's transaction, which a refused statement would abort, ids are always looked up
 * with the counters locked.
 */
export async function appendOnPostgres(
  db: Knex,
  partitions: EventPartitions,
  notifyChannel: string,
  appends: WorkspaceAppend[],
  storedAt: number,
  sortOut: SortOutStored,
  { trx, skipLocked }: PostgresAppendOptions,
): Promise<FirstSeqs> {
  if (!partitions.covers(storedAt)) await partitions.ensureFor(storedAt, trx);
  if (trx) {
    const withIds = idsToLookUp(appends).some((w) => w.ids.length > 0);
    return withIds
      ? appendLocked(trx, notifyChannel, appends, storedAt, sortOut, skipLocked)
      : appendStatement(trx, notifyChannel, appends, storedAt, sortOut, [], skipLocked);
  }
  const { stored, newest } = await findByIdsWithNewest(db, appends);
  try {
    return await unknownUnlessRolledBack(() => appendStatement(db, notifyChannel, appends, storedAt, sortOut, stored, skipLocked, newest));
  } catch (err) {
    // Waiting for the counters here, not skipping: a skipped workspace would be sent again after
    // the appends queued behind it (in two instances racing on a new workspace, both skipped each
    // other and a later emit of the same id was stored first).
    if (sqlState(err) === CROSSES_WEEK) {
      return unknownUnlessRolledBack(() => db.transaction((own) => appendLocked(own, notifyChannel, appends, storedAt, sortOut)));
    }
    throw err;
  }
}

/** Runs an append that commits by itself: a failure that does not prove it rolled back becomes OutcomeUnknown. */
async function unknownUnlessRolledBack<T>(append: () => Promise<T>): Promise<T> {
  try {
    return await append();
  } catch (err) {
    throw provesRollback(err) ? err : new OutcomeUnknown(err);
  }
}

/**
 * The ids lookup and, in the same snapshot, each asking workspace's newest stored_at: anything
 * committed after this snapshot was stored at or after it.
 */
async function findByIdsWithNewest(db: Knex, appends: WorkspaceAppend[]): Promise<{ stored: StoredIdRow[]; newest: Map<string, number> }> {
  const asked = idsToLookUp(appends).filter((w) => w.ids.length > 0);
  if (asked.length === 0) return { stored: [], newest: new Map() };
  const workspaces = asked.map((w) => w.workspaceId);
  const ids = asked.flatMap((w) => w.ids);
  const rows = await postgresRows<StoredIdRow & { newest: string | null }>(
    db,
    `SELECT workspace_id, id, envelope, NULL::bigint AS newest FROM events
      WHERE workspace_id IN (${placeholders(workspaces.length)}) AND id IN (${placeholders(ids.length)})
     UNION ALL
     SELECT workspace_id, NULL, NULL, last_stored_at FROM feed_counters WHERE workspace_id IN (${placeholders(workspaces.length)})`,
    [...workspaces, ...ids, ...workspaces],
  );
  const stored = onlyAsked(
    asked,
    rows.filter((row) => row.newest === null),
  );
  const newest = new Map(rows.filter((row) => row.newest !== null).map((row) => [row.workspace_id, Number(row.newest)]));
  return { stored, newest };
}

/**
 * The append with the workspaces' counters locked first (in workspace order, skipping those held
 * elsewhere with skipLocked): the ids lookup that follows sees every event of those workspaces
 * that will ever precede these.
 */
async function appendLocked(
  trx: Knex.Transaction,
  notifyChannel: string,
  appends: WorkspaceAppend[],
  storedAt: number,
  sortOut: SortOutStored,
  skipLocked = false,
): Promise<FirstSeqs> {
  const workspaces = inWorkspaceOrder(appends).map((a) => a.workspaceId);
  const rows = await postgresRows<{ workspace_id: string }>(
    trx,
    `SELECT workspace_id FROM feed_counters WHERE workspace_id IN (${placeholders(workspaces.length)}) ORDER BY workspace_id FOR UPDATE${skipLocked ? ' SKIP LOCKED' : ''}`,
    workspaces,
  );
  const locked = new Set(rows.map((row) => row.workspace_id));
  const mine = appends.filter((a) => locked.has(a.workspaceId));
  if (mine.length === 0) return new Map();
  // Only the workspaces locked here: another's ids were not looked up under its lock (it is skipped, and sent again).
  const sortOutMine: SortOutStored = (stored) => sortOut(stored).filter((a) => locked.has(a.workspaceId));
  return appendStatement(
    trx,
    notifyChannel,
    mine,
    storedAt,
    sortOutMine,
    await findByIds(postgresRows, trx, idsToLookUp(mine)),
    skipLocked,
  );
}

/**
 * The append statement for what `sortOut` leaves of `appends` given the `stored` ids. With
 * `newest` (from findByIdsWithNewest), a workspace whose stored_at would fall in another week
 * than its newest there makes the statement fail with CROSSES_WEEK.
 */
async function appendStatement(
  exec: Knex | Knex.Transaction,
  notifyChannel: string,
  appends: WorkspaceAppend[],
  storedAt: number,
  sortOut: SortOutStored,
  stored: StoredIdRow[],
  skipLocked = false,
  newest: Map<string, number> = new Map(),
): Promise<FirstSeqs> {
  const fresh = sortOut(stored);
  const firstSeqs: FirstSeqs = new Map();
  if (fresh.length === 0) return firstSeqs;
  const sorted = inWorkspaceOrder(fresh);
  const rows = await preparedRows<{ workspace_id: string; last_seq: number; k: number }>(
    exec,
    pgAppendStatement(sorted, storedAt, newest, notifyChannel, skipLocked),
  );
  for (const row of rows) firstSeqs.set(row.workspace_id, Number(row.last_seq) - Number(row.k) + 1);
  if (skipLocked) return firstSeqs;
  for (const { workspaceId } of sorted) if (!firstSeqs.has(workspaceId)) throw new Error(`workspace ${workspaceId} has no feed counter`);
  return firstSeqs;
}

/**
 * An append on Postgres as one statement: move the workspaces' counters, insert their events at
 * the seqs that gives, write the webhook deliveries those events owe to their workspaces' enabled
 * endpoints (the outbox) and notify the new heads. One round trip instead of five, and, being one
 * statement, atomic even outside a transaction, which lets the group commit run it without BEGIN
 * and COMMIT.
 *
 * The ordering argument (the write path's notes beside inWorkspaceOrder) holds unchanged: the counter rows are locked (in workspace
 * order) by the statement's first step and kept until it commits, so seqs are handed out in commit
 * order. All parts of a statement run on one snapshot, but the UPDATE of a row that another
 * transaction changed meanwhile waits for it and then works on the committed row (READ COMMITTED's
 * re-check), which is what gives each transaction the counter its predecessor left.
 *
 * With `skipLocked` (the group commit's statements), a counter row that another transaction holds
 * is skipped instead of waited for (FOR UPDATE SKIP LOCKED): the statement appends the events of
 * the workspaces it could lock and returns only those, and the caller sends the others' events
 * where waiting for their rows holds back no other workspace (GroupCommit). Skipping takes
 * nothing and waits for nothing, so it leaves the ordering argument and the lock order as they are.
 * Without it (the library, inside the caller's transaction, and the group commit's lane for a
 * workspace found locked), the statement waits for each row, up to lock_timeout (openPostgresKnex).
 *
 * The events travel as one array per column, so the text is the same for every batch (one for a
 * single workspace, one for several; each waiting or skipping) and is prepared once per
 * connection: Postgres planned the old text, whose VALUES list followed the batch's shape, on
 * every run, which was about half of its CPU per event.
 */
function pgAppendStatement(
  sorted: WorkspaceAppend[],
  storedAt: number,
  newest: Map<string, number>,
  notifyChannel: string,
  skipLocked = false,
): PgStatement {
  const single = sorted.length === 1;
  const columns: [string[], number[], string[], string[], (string | null)[], number[], string[]] = [[], [], [], [], [], [], []];
  const [workspaceIds, ords, ids, types, mailboxIds, occurredAts, envelopes] = columns;
  for (const { workspaceId, events } of sorted) {
    events.forEach((event, i) => {
      workspaceIds.push(workspaceId);
      ords.push(i + 1);
      ids.push(event.id);
      types.push(event.type);
      mailboxIds.push(event.mailboxId);
      occurredAts.push(event.occurredAtMs);
      envelopes.push(event.envelope);
    });
  }
  const counters = single
    ? [sorted[0]!.workspaceId, sorted[0]!.events.length]
    : [sorted.map((a) => a.workspaceId), sorted.map((a) => a.events.length)];
  const newestSeen = single ? (newest.get(sorted[0]!.workspaceId) ?? null) : sorted.map((a) => newest.get(a.workspaceId) ?? null);
  // Traced emits (tracing on) carry their trace contexts as $12, for their outbox rows; a batch
  // without any takes the statement without it.
  const traces = sorted.flatMap((a) => a.events.map((event) => event.traceContext ?? null));
  if (!traces.some((trace) => trace !== null)) {
    return { ...statementFor(single, skipLocked, notifyChannel, false), values: [...counters, storedAt, ...columns, newestSeen] };
  }
  return { ...statementFor(single, skipLocked, notifyChannel, true), values: [...counters, storedAt, ...columns, newestSeen, traces] };
}

// Each bump also moves the workspace's newest stored_at to GREATEST(it, $3) (migration 009) and
// returns it as `stored_at`, the one its events get, with `crossed`: the guard of appendOnPostgres
// ($11, the newest stored_at the ids lookup saw, NULL for no guard) finds it in another week.
const crossed = (newestSeen: string) =>
  `(${newestSeen} IS NOT NULL AND ${sqlWeekOf('last_stored_at')} <> ${sqlWeekOf(newestSeen)}) AS crossed`;

/** $1 the workspace, $2 its event count, $11 the guard's newest stored_at. */
const ONE_WORKSPACE_BUMP = `bumped AS (
      UPDATE feed_counters SET last_seq = last_seq + $2::bigint, last_stored_at = GREATEST(last_stored_at, $3::bigint)
       WHERE workspace_id = $1::text
      RETURNING workspace_id, last_seq, $2::bigint AS k, last_stored_at AS stored_at, ${crossed('$11::bigint')}
    )`;

/** The same, skipping the row when another transaction holds it (then nothing is bumped). */
const ONE_WORKSPACE_BUMP_UNLESS_LOCKED = `locked AS MATERIALIZED (
      SELECT workspace_id FROM feed_counters WHERE workspace_id = $1::text FOR UPDATE SKIP LOCKED
    ), bumped AS (
      UPDATE feed_counters c SET last_seq = c.last_seq + $2::bigint, last_stored_at = GREATEST(c.last_stored_at, $3::bigint) FROM locked
       WHERE c.workspace_id = locked.workspace_id
      RETURNING c.workspace_id, c.last_seq, $2::bigint AS k, c.last_stored_at AS stored_at, ${crossed('$11::bigint')}
    )`;

/**
 * $1 the workspaces (sorted, distinct), $2 their event counts, $11 their guards. Postgres locks
 * the rows of a multi-row UPDATE in scan order: they are locked in workspace order first (waiting
 * for each, or skipping those another transaction holds), and only the rows locked are bumped.
 */
const manyWorkspacesBump = (lock: 'FOR UPDATE' | 'FOR UPDATE SKIP LOCKED') => `locked AS MATERIALIZED (
      SELECT workspace_id FROM feed_counters WHERE workspace_id = ANY($1::text[]) ORDER BY workspace_id ${lock}
    ), bumped AS (
      UPDATE feed_counters c SET last_seq = c.last_seq + v.k, last_stored_at = GREATEST(c.last_stored_at, $3::bigint)
        FROM unnest($1::text[], $2::bigint[], $11::bigint[]) AS v(workspace_id, k, newest_seen), locked
       WHERE c.workspace_id = v.workspace_id AND locked.workspace_id = c.workspace_id
      RETURNING c.workspace_id, c.last_seq, v.k, c.last_stored_at AS stored_at, ${crossed('v.newest_seen')}
    )`;

const BUMPS = {
  'one wait': ONE_WORKSPACE_BUMP,
  'one skip': ONE_WORKSPACE_BUMP_UNLESS_LOCKED,
  'many wait': manyWorkspacesBump('FOR UPDATE'),
  'many skip': manyWorkspacesBump('FOR UPDATE SKIP LOCKED'),
};

/**
 * The four statements (one workspace or several, waiting or skipping) per channel, each under a
 * name of its own. The channel is part of the text rather than a value: as a value ($12) it cost
 * a measurable share of ingestion into one workspace.
 */
const statements = new Map<string, { name: string; text: string }>();
function statementFor(single: boolean, skipLocked: boolean, notifyChannel: string, traced: boolean): { name: string; text: string } {
  const bump = `${single ? 'one' : 'many'} ${skipLocked ? 'skip' : 'wait'}` as const;
  const key = `${bump} ${notifyChannel}${traced ? ' traced' : ''}`;
  let statement = statements.get(key);
  if (!statement) {
    statement = { name: `event_feed_append_${statements.size + 1}`, text: statementText(BUMPS[bump], notifyChannel, traced) };
    statements.set(key, statement);
  }
  return statement;
}

/**
 * The statement after its counter step `bump`: $3 the clock's stored_at, then one array per column
 * of the events, in workspace order and arrival order within a workspace ($4 workspace, $5
 * position in its workspace's part, $6 id, $7 type, $8 mailbox, $9 occurred_at_ms, $10 envelope),
 * and $11 the guard (see the bumps).
 */
function statementText(bump: string, notifyChannel: string, traced: boolean): string {
  const insert = `inserted AS (
    INSERT INTO events (workspace_id, seq, id, type, mailbox_id, occurred_at_ms, stored_at, envelope)
    SELECT r.workspace_id, b.last_seq - b.k + r.ord, r.id, r.type, r.mailbox_id, r.occurred_at_ms, b.stored_at, r.envelope
      FROM unnest($4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[])
           AS r(workspace_id, ord, id, type, mailbox_id, occurred_at_ms, envelope)
      JOIN bumped b ON b.workspace_id = r.workspace_id
    RETURNING workspace_id, seq, id, type
  )`;
  // The deliveries owed: one per (enabled endpoint of the event's workspace, event of a type it
  // takes). Filters are exact types or prefixes ending in `.*`, [] takes every type: the rule of
  // matchesTypes, which SQLite applies in process; the webhook tests hold
  // both to it. Emitted types are the contract's, so a prefix matches exactly what it expands to.
  const deliveries = `, outbox AS (
    INSERT INTO webhook_deliveries (endpoint_id, workspace_id, event_seq, event_id, attempts, next_attempt_at, created_at${traced ? ', trace_context' : ''})
    SELECT w.id, i.workspace_id, i.seq, i.id, 0, $3::bigint, $3::bigint${traced ? ', t.trace_context' : ''}
      FROM inserted i JOIN webhook_endpoints w ON w.workspace_id = i.workspace_id AND w.enabled${
        traced
          ? `
      JOIN unnest($4::text[], $6::text[], $12::text[]) AS t(workspace_id, id, trace_context) ON t.workspace_id = i.workspace_id AND t.id = i.id`
          : ''
      }
     WHERE json_array_length(w.event_types::json) = 0 OR EXISTS (
       SELECT 1 FROM json_array_elements_text(w.event_types::json) AS f(filter)
        WHERE f.filter = i.type OR (f.filter LIKE '%.*' AND starts_with(i.type, left(f.filter, -1))))
  )`;

  // Data-modifying parts run to completion whether or not the final SELECT reads them; a crossed
  // guard fails the whole statement (nothing of it stays).
  return `WITH ${bump}, ${insert}${deliveries}
    SELECT workspace_id, last_seq, k, CASE WHEN crossed THEN event_feed_append_crosses_week() END,
           pg_notify('${notifyChannel}', workspace_id || ' ' || last_seq) FROM bumped`;
}
