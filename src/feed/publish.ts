import type { Knex } from 'knex';
import type { EmitEventRequest } from '../../generated/types.ts';
import { utcMillisecondsOf } from '../contract/date-time.ts';
import { ApiError, invalidArgument } from '../base/errors.ts';
import { newEventId } from '../base/ids.ts';
import { appendInTransaction } from '../store/open-store.ts';
import type { AppendOptions, FeedStore, FirstSeqs, NewEvent, SortOutStored, StoredIdRow, WorkspaceAppend } from '../store/port.ts';
import type { PublishedEvent } from './published-event.ts';
import { sameEvent } from './same-event.ts';

/**
 * The one append path: `emit_event` (through the group commit, GroupCommit) and the
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
  } = await appendSortedOut([{ workspaceId, events: prepared }], (sortOut) =>
    appendInTransaction(trx, [{ workspaceId, events: prepared }], now.getTime(), sortOut),
  );
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
 * when it is the same event (an idempotent replay, sameEvent) and as an invalid_argument
 * error otherwise; the others are appended. One answer per event, in the shape of `appends`.
 * Outside a transaction, an append that may or may not have committed throws OutcomeUnknown
 * (OutcomeUnknown). `skipLocked` (Store.appends.skipLocked) skips the workspaces
 * whose counter row another transaction holds instead of waiting for them (Appended.skipped).
 */
export function appendPrepared(
  store: FeedStore,
  appends: WorkspaceAppend[],
  storedAt: number,
  options: AppendOptions = {},
): Promise<Appended> {
  return appendSortedOut(appends, (sortOut) => store.append(appends, storedAt, sortOut, options));
}

/** Runs `append` with this module's rule for stored ids, and answers each event of `appends`. */
async function appendSortedOut(appends: WorkspaceAppend[], append: (sortOut: SortOutStored) => Promise<FirstSeqs>): Promise<Appended> {
  // The rule runs inside the append's transaction, once per attempt: the outcomes are the last attempt's.
  let sorted: ReturnType<typeof sortOut> = { outcomes: appends.map(() => []), fresh: [] };
  const firstSeqs = await append((stored) => (sorted = sortOut(appends, stored)).fresh);
  const { outcomes, fresh } = sorted;
  const appended = fresh.filter(({ workspaceId }) => firstSeqs.has(workspaceId));
  const skipped = fresh.filter(({ workspaceId }) => !firstSeqs.has(workspaceId)).map(({ workspaceId }) => workspaceId);
  return { outcomes, appended: appendedAt(appended, firstSeqs), skipped };
}

/** The appended events with the first seq each workspace's run took. */
const appendedAt = (fresh: WorkspaceAppend[], firstSeqs: Map<string, number>): Appended['appended'] =>
  fresh.map(({ workspaceId, events }) => ({ workspaceId, firstSeq: firstSeqs.get(workspaceId)!, events }));

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
  // One rule for every date-time of the contract (utcMillisecondsOf): UTC, milliseconds, `Z`.
  const occurred =
    input.occurred_at === undefined ? { iso: now.toISOString(), ms: now.getTime() } : utcMillisecondsOf('occurred_at', input.occurred_at);
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
