import type { Knex } from 'knex';
import type { EmitEventRequest } from '../../generated/types.ts';
import { utcMillisecondsOf } from '../contract/date-time.ts';
import { ApiError, invalidArgument } from '../errors.ts';
import { newEventId } from '../ids.ts';
import { dbKind, type Db } from '../store/db.ts';
import { appendEvents, findByIds, inWorkspaceOrder, type NewEvent, type StoredIdRow, type WorkspaceAppend } from '../store/events.ts';
import { connectionOf, sqliteAppendEvents, sqliteStoredByIds } from '../store/sqlite-append.ts';
import type { SqliteConnection } from '../store/sqlite-connection.ts';
import { OutcomeUnknown, provesRollback } from '../store/write-outcome.ts';
import type { PublishedEvent } from './published-event.ts';
import { sameEvent } from './same-event.ts';

/**
 * The one append path: `emit_event` (through the group commit, feed/group-commit.ts) and the
 * in-process library both come through here, inside a transaction the caller owns, so events
 * commit (or vanish) with the caller's own writes, and so do their webhook deliveries (the outbox
 * rows are written in the same transaction).
 * Events of one call belong to one workspace; a caller that publishes to several workspaces in one
 * transaction must do so in sorted workspace order so counter row locks are taken in one order.
 * Throws the first event's error, if any: the caller's transaction should then roll back.
 */
export async function publishInTransaction(
  trx: Knex.Transaction,
  workspaceId: string,
  inputs: EmitEventRequest[],
  now: Date,
): Promise<PublishedEvent[]> {
  const prepared = inputs.map((input) => prepareEvent(workspaceId, input, now));
  if (new Set(prepared.map((event) => event.id)).size !== prepared.length) {
    throw invalidArgument('the same event id appears twice in one publish call');
  }
  const {
    outcomes: [outcomes],
  } = await appendPrepared(trx, [{ workspaceId, events: prepared }], now.getTime());
  const failed = outcomes!.find((outcome) => outcome instanceof ApiError);
  if (failed) throw failed;
  return outcomes as PublishedEvent[];
}

/** What appendPrepared did: one answer per event, and per workspace appended to, the new events from their first seq. */
export interface Appended {
  outcomes: Array<Array<PublishedEvent | ApiError>>;
  appended: Array<{ workspaceId: string; firstSeq: number; events: NewEvent[] }>;
  /**
   * With skipLocked: the workspaces whose counter row another transaction held. None of their
   * events was appended, and their outcomes are not answers: their events must be sent again.
   */
  skipped: string[];
}

/**
 * Appends prepared events to workspaces' feeds, in order within each workspace (ids distinct per
 * workspace). An event whose client-supplied id is already stored comes back as that stored event
 * when it is the same event (an idempotent replay, feed/same-event.ts) and as an invalid_argument
 * error otherwise; the others are appended. One answer per event, in the shape of `appends`. Whatever the number of
 * workspaces, it is two statements on Postgres: stored ids (only when the client gave ids) and the
 * append (counters, events, webhook deliveries); `exec` may be the database itself there: only the
 * last statement writes, and it is atomic on its own. On SQLite `exec` is a transaction, whose
 * connection runs appendPreparedOn.
 *
 * Outside a transaction on Postgres, the append statement commits by itself, so when it fails in a
 * way that does not prove it rolled back (the connection lost, the client's query timeout: the
 * commit may have happened), this throws OutcomeUnknown (store/write-outcome.ts).
 * `skipLocked` (Postgres) skips the workspaces whose counter row another transaction holds
 * instead of waiting for them (Appended.skipped).
 */
export async function appendPrepared(exec: Knex | Knex.Transaction, appends: WorkspaceAppend[], storedAt: number, options: { skipLocked?: boolean } = {}): Promise<Appended> {
  if (dbKind(exec as Db) === 'sqlite') {
    if (!(exec as Knex.Transaction).isTransaction) throw new Error('appendPrepared on SQLite runs in a transaction');
    return appendPreparedOn(await connectionOf(exec as Knex.Transaction), appends, storedAt);
  }
  const stored = await findByIds(exec, idsToLookUp(appends));
  const { outcomes, fresh } = sortOut(appends, stored);
  if (fresh.length === 0) return { outcomes, appended: [], skipped: [] };
  const commitsAlone = !(exec as Knex.Transaction).isTransaction;
  const firstSeqs = await appendEvents(exec, fresh, storedAt, options).catch((err: unknown) => {
    throw commitsAlone && !provesRollback(err) ? new OutcomeUnknown(err) : err;
  });
  const appended = fresh.filter(({ workspaceId }) => firstSeqs.has(workspaceId));
  const skipped = fresh.filter(({ workspaceId }) => !firstSeqs.has(workspaceId)).map(({ workspaceId }) => workspaceId);
  return { outcomes, appended: appendedAt(appended, firstSeqs), skipped };
}

/** appendPrepared on SQLite, synchronously, inside a transaction open on `conn` (store/sqlite-append.ts). */
export function appendPreparedOn(conn: SqliteConnection, appends: WorkspaceAppend[], storedAt: number): Appended {
  const { outcomes, fresh } = sortOut(appends, sqliteStoredByIds(conn, idsToLookUp(appends)));
  return { outcomes, appended: appendedAt(fresh, fresh.length > 0 ? sqliteAppendEvents(conn, inWorkspaceOrder(fresh), storedAt) : new Map()), skipped: [] };
}

/** The appended events with the first seq each workspace's run took. */
const appendedAt = (fresh: WorkspaceAppend[], firstSeqs: Map<string, number>): Appended['appended'] =>
  fresh.map(({ workspaceId, events }) => ({ workspaceId, firstSeq: firstSeqs.get(workspaceId)!, events }));

/** The client-supplied ids of these events (generated ones cannot be stored yet). */
const idsToLookUp = (appends: WorkspaceAppend[]) =>
  appends.map(({ workspaceId, events }) => ({ workspaceId, ids: events.filter((event) => event.clientId !== null).map((event) => event.id) }));

/** Each event's answer given what is stored under its id, and the events still to append. */
function sortOut(appends: WorkspaceAppend[], storedRows: StoredIdRow[]): { outcomes: Appended['outcomes']; fresh: WorkspaceAppend[] } {
  const stored = new Map(storedRows.map((row) => [`${row.workspace_id} ${row.id}`, row]));
  const fresh: WorkspaceAppend[] = [];
  const outcomes = appends.map(({ workspaceId, events }) => {
    const freshEvents: NewEvent[] = [];
    const answers = events.map((event): PublishedEvent | ApiError => {
      const existing = stored.get(`${workspaceId} ${event.id}`);
      if (!existing) {
        freshEvents.push(event);
        return { envelope: event.envelope, created: true };
      }
      if (event.clientId === null || !sameEvent(existing.envelope, event.envelope, event.clientId.occurredAtGiven)) {
        return invalidArgument(`event id ${event.id} was already used for an event with other content`);
      }
      return { envelope: existing.envelope, created: false };
    });
    if (freshEvents.length > 0) fresh.push({ workspaceId, events: freshEvents });
    return answers;
  });
  return { outcomes, fresh };
}

/** An event's final envelope text and its columns; throws invalid_argument for an unusable `occurred_at`. */
export function prepareEvent(workspaceId: string, input: EmitEventRequest, now: Date): NewEvent {
  const id = input.id ?? newEventId(now.getTime());
  // One rule for every date-time of the contract (contract/date-time.ts): UTC, milliseconds, `Z`.
  const occurred = input.occurred_at === undefined ? { iso: now.toISOString(), ms: now.getTime() } : utcMillisecondsOf('occurred_at', input.occurred_at);
  // Field order is the envelope's documented order; this text is what every reader and webhook gets.
  const envelope = JSON.stringify({
    id,
    type: input.type,
    occurred_at: occurred.iso,
    account: workspaceId,
    subject: input.subject,
    data: input.data,
    v: 1,
  });
  return {
    id,
    type: input.type,
    mailboxId: input.subject.refs.mailbox_id ?? null,
    occurredAtMs: occurred.ms,
    envelope,
    clientId: input.id === undefined ? null : { occurredAtGiven: input.occurred_at !== undefined },
  };
}
