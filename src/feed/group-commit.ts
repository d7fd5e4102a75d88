import type { EmitEventRequest } from '../../generated/types.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { dbKind, type Db } from '../store/db.ts';
import type { NewEvent } from '../store/events.ts';
import { inSqliteWriteTransaction } from '../store/sqlite-append.ts';
import { retryingTransient } from '../store/write-transaction.ts';
import { appendFailure } from './append-failure.ts';
import type { FeedHeads } from './heads.ts';
import type { RecentEvents } from './recent-events.ts';
import { appendPrepared, appendPreparedOn, prepareEvent, type PublishedEvent } from './publish.ts';

/** The most events one shared transaction takes; the rest wait for the next one. */
export const GROUP_COMMIT_MAX_EVENTS = 256;
/** On Postgres a second transaction may run while one commits: its statements overlap the first one's WAL flush. */
export const POSTGRES_TRANSACTIONS_IN_FLIGHT = 2;

interface Pending {
  workspaceId: string;
  event: NewEvent;
  resolve(published: PublishedEvent): void;
  reject(err: unknown): void;
}

/**
 * Group commit for emit_event: appends that arrive while a transaction is being committed wait
 * for it, then share the next one. A transaction costs far more than an insert (counter row locks,
 * a WAL write or an fsync, several round trips), so under load many events share that cost;
 * alone, an append commits at once, without waiting for company.
 *
 * Each event keeps its own answer: an idempotency conflict fails that event only; a failed
 * transaction (run again first when its error is transient, see retryingTransient) fails the events
 * it carried, each with an answer true to what the database did (feed/append-failure.ts). A
 * transaction appends its events in arrival order, and an emit is answered only once committed,
 * so one client's successive emits keep their order (concurrent emits have none to keep).
 *
 * Transactions take events of every workspace, not one lane per workspace: a batch over many
 * workspaces is still a handful of statements (appendPrepared), so this beat a lane per workspace
 * committing in parallel on Postgres (about 1,200 against 650 events/s from 16 clients into 100
 * workspaces: bench/README.md). SQLite has a single writer: one transaction at a time. On Postgres
 * two may be in flight; two that touch one workspace simply queue on its counter row, and counter
 * rows are locked in workspace order (appendEvents), here and across instances, so they never deadlock.
 */
export class GroupCommit {
  #waiting: Pending[] = [];
  #inFlight = 0;
  #scheduled = false;
  readonly #maxInFlight: number;
  readonly #postgres: boolean;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly heads?: FeedHeads,
    private readonly recent?: RecentEvents,
  ) {
    this.#postgres = dbKind(db) === 'postgres';
    this.#maxInFlight = this.#postgres ? POSTGRES_TRANSACTIONS_IN_FLIGHT : 1;
  }

  /** Appends one event to a workspace's feed once its transaction commits. */
  append(workspaceId: string, input: EmitEventRequest): Promise<PublishedEvent> {
    // Built before waiting, outside any transaction: a bad occurred_at fails here, alone.
    const event = prepareEvent(workspaceId, input, this.clock.now());
    return new Promise((resolve, reject) => {
      this.#waiting.push({ workspaceId, event, resolve, reject });
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight || this.#waiting.length === 0) return;
    this.#scheduled = true;
    // Let the appends that arrive in the same turn of the event loop join the transaction.
    setImmediate(() => {
      this.#scheduled = false;
      void this.#run();
    });
  }

  async #run(): Promise<void> {
    if (this.#inFlight >= this.#maxInFlight) return;
    const batch = this.#take();
    if (batch.length === 0) return;
    this.#inFlight++;
    try {
      await this.#commit(batch);
    } finally {
      this.#inFlight--;
      this.#kick();
    }
  }

  /**
   * The next transaction's events, in arrival order. A second event with an id already in the batch
   * (a client retrying before its first try was answered) waits for a later transaction, which
   * then finds the first one stored (or, on Postgres, runs into it on the unique index and is run
   * again by retryingTransient) and answers as an idempotent replay or a conflict.
   */
  #take(): Pending[] {
    const batch: Pending[] = [];
    const later: Pending[] = [];
    const ids = new Set<string>();
    for (const pending of this.#waiting) {
      const key = `${pending.workspaceId} ${pending.event.id}`;
      if (batch.length >= GROUP_COMMIT_MAX_EVENTS || ids.has(key)) later.push(pending);
      else {
        ids.add(key);
        batch.push(pending);
      }
    }
    this.#waiting = later;
    return batch;
  }

  async #commit(batch: Pending[]): Promise<void> {
    const byWorkspace = new Map<string, Pending[]>();
    for (const pending of batch) {
      const group = byWorkspace.get(pending.workspaceId);
      if (group) group.push(pending);
      else byWorkspace.set(pending.workspaceId, [pending]);
    }
    const groups = [...byWorkspace.values()]; // appendEvents locks their counters in workspace order
    const appends = groups.map((group) => ({ workspaceId: group[0]!.workspaceId, events: group.map((p) => p.event) }));
    const storedAt = this.clock.now().getTime();
    try {
      // Postgres: the append is one statement, atomic alone (store/pg-append.ts), so no BEGIN and
      // COMMIT around it: two round trips fewer. SQLite: one synchronous transaction on the
      // writing connection (store/sqlite-append.ts), without a knex transaction.
      const { outcomes: results, appended } = await retryingTransient(() =>
        this.#postgres ? appendPrepared(this.db, appends, storedAt) : inSqliteWriteTransaction(this.db, (conn) => appendPreparedOn(conn, appends, storedAt)),
      );
      const outcomes = new Map<Pending, PublishedEvent | ApiError>();
      groups.forEach((group, g) => group.forEach((pending, i) => outcomes.set(pending, results[g]![i]!)));
      // Committed: a poll of this process after an emit's answer must find it, even before the
      // commit's notification comes back (feed/heads.ts); and tailing readers find the events
      // here rather than in the database (feed/recent-events.ts).
      for (const { workspaceId, firstSeq, events } of appended) {
        this.recent?.committed(workspaceId, firstSeq, events);
        this.heads?.heard(workspaceId, firstSeq + events.length - 1);
      }
      for (const [pending, outcome] of outcomes) {
        if (outcome instanceof ApiError) pending.reject(outcome);
        else pending.resolve(outcome);
      }
    } catch (err) {
      for (const pending of batch) pending.reject(appendFailure(err, pending.event.id));
    }
  }
}
