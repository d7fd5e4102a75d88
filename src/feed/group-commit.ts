import type { EmitEventRequest } from '../../generated/types.ts';
import type { Clock } from '../base/clock.ts';
import { ApiError } from '../base/errors.ts';
import type { FeedStore, NewEvent } from '../store/port.ts';
import { appendFailure } from './append-failure.ts';
import type { FeedHeads } from './heads.ts';
import type { RecentEvents } from './recent-events.ts';
import { appendPrepared, prepareEvent, type Appended } from './publish.ts';
import type { PublishedEvent } from './published-event.ts';
import { currentTraceparent, inGroupCommitSpan, recordingSpan, type Span } from '../tracing/spans.ts';

/** The most events one shared transaction takes; the rest wait for the next one. */
export const GROUP_COMMIT_MAX_EVENTS = 256;
/**
 * Where appends may skip a locked workspace (Postgres), how many workspaces found locked by
 * another transaction may each have a statement waiting for its counter row at once (each holds a pooled connection while it waits), besides
 * the shared transactions.
 */
export const POSTGRES_LOCKED_WORKSPACES_WAITING = 2;
/**
 * How long a workspace's events wait for a statement of this process that carries some of its
 * own before they may go in the next one anyway (which finds the row still held, if it is, and
 * sends them to a lane that waits for it). A statement takes milliseconds; one this old is slow or
 * stuck (a lost connection, a commit that does not end), and waiting for it would add its whole
 * time to theirs.
 */
export const SAME_WORKSPACE_PATIENCE_MS = 300;

/**
 * Told of each append statement that committed: the events it carried, and how many of them are
 * new in the feed (the others were stored already: idempotent retries, conflicts). The metrics
 * count batch sizes and events appended from it; the group commit knows nothing of them.
 */
export type CommitObserver = (statement: { events: number; appended: number }) => void;

interface Pending {
  workspaceId: string;
  event: NewEvent;
  resolve(published: PublishedEvent): void;
  reject(err: unknown): void;
  /** The emit's span while tracing is on and its trace is sampled: the group commit links to it. */
  span?: Span;
}

/**
 * Group commit for emit_event: appends that arrive while a transaction is being committed wait
 * for it, then share the next one. A transaction costs far more than an insert (counter row locks,
 * a WAL write or an fsync, several round trips), so under load many events share that cost;
 * alone, an append commits at once, without waiting for company.
 *
 * Each event keeps its own answer: an idempotency conflict fails that event only; a failed
 * transaction (run again first when its error is transient, see Store.retryingTransient) fails the events
 * it carried, each with an answer true to what the database did (appendFailure). A
 * transaction appends its events in arrival order, and an emit is answered only once committed,
 * so one client's successive emits keep their order (concurrent emits have none to keep).
 *
 * Transactions take events of every workspace, not one lane per workspace: a batch over many
 * workspaces is still a handful of statements (appendPrepared), which does more per round trip than
 * a lane per workspace committing in parallel. A single writer (SQLite) takes one transaction at
 * a time; where the store allows more (Store.appends.concurrent: Postgres) they run over
 * different workspaces: a workspace's events wait while a statement of
 * this process carries some of its own (for SAME_WORKSPACE_PATIENCE_MS at most), so the process
 * does not contend with itself for a counter row.
 *
 * One workspace never holds back another (Postgres). Another transaction may hold a workspace's
 * counter row: an application's transaction that published with the library and has not committed
 * yet, or another instance's statement. The shared statement skips such a row instead of waiting
 * for it (FOR UPDATE SKIP LOCKED, appendOnPostgres) and appends everything else; the skipped
 * workspace's events, and those that arrive for it afterwards, then go to a lane of their own that
 * waits for its row (up to lock_timeout) on a connection of its own, outside the two
 * shared slots, a statement at a time and in arrival order, until the lane is empty and the
 * workspace is back in the shared transactions. Skipping takes and waits for nothing, and a lane
 * waits for one row and holds no other, so counter rows are still taken in workspace order
 * (inWorkspaceOrder), here and across instances, and never deadlock.
 */
export class GroupCommit {
  #waiting: Pending[] = [];
  #inFlight = 0;
  #scheduled = false;
  #patience: NodeJS.Timeout | undefined;
  /** Workspaces in shared statements in flight: how many, and since when (the oldest). */
  readonly #shared = new Map<string, { statements: number; sinceMs: number }>();
  /** Workspaces found locked by another transaction, each with its events waiting, in arrival order. */
  readonly #lanes = new Map<string, Pending[]>();
  /** Lanes with a statement in flight (one at a time per lane). */
  readonly #lanesRunning = new Set<string>();
  readonly #maxInFlight: number;
  /** Several statements in flight (Store.appends.concurrent > 1): a workspace waits for its own. */
  readonly #overlapping: boolean;

  constructor(
    private readonly store: FeedStore,
    private readonly clock: Clock,
    private readonly heads?: FeedHeads,
    private readonly recent?: RecentEvents,
    private readonly onCommit?: CommitObserver,
  ) {
    this.#maxInFlight = store.appends.concurrent;
    this.#overlapping = this.#maxInFlight > 1;
  }

  /** Appends one event to a workspace's feed once its transaction commits. */
  append(workspaceId: string, input: EmitEventRequest): Promise<PublishedEvent> {
    // Built before waiting, outside any transaction: a bad occurred_at fails here, alone.
    const event = prepareEvent(workspaceId, input, this.clock.now());
    // Traced (tracing on), the emit's trace context goes with its outbox rows (its deliveries join it).
    const traceContext = currentTraceparent();
    if (traceContext !== undefined) event.traceContext = traceContext;
    const span = traceContext === undefined ? undefined : recordingSpan();
    return new Promise((resolve, reject) => {
      const pending: Pending = { workspaceId, event, resolve, reject, ...(span ? { span } : {}) };
      const lane = this.#lanes.get(workspaceId);
      if (lane) {
        lane.push(pending);
        this.#kickLanes();
      } else {
        this.#waiting.push(pending);
        this.#kick();
      }
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
    // One statement at a time (a single writer): no statement of its own in flight to wait for.
    const now = performance.now();
    const batch = this.#overlapping
      ? this.#take(this.#waiting, (pending) => this.#patient(pending, now))
      : this.#take(this.#waiting, () => true);
    if (this.#overlapping && this.#waiting.length > 0) this.#kickAfterPatience();
    if (batch.length === 0) return;
    const workspaces = this.#overlapping ? new Set(batch.map((pending) => pending.workspaceId)) : new Set<string>();
    for (const workspaceId of workspaces) {
      const shared = this.#shared.get(workspaceId);
      this.#shared.set(workspaceId, { statements: (shared?.statements ?? 0) + 1, sinceMs: shared?.sinceMs ?? now });
    }
    this.#inFlight++;
    try {
      await this.#commit(batch);
    } finally {
      this.#inFlight--;
      for (const workspaceId of workspaces) {
        const shared = this.#shared.get(workspaceId)!;
        if (--shared.statements === 0) this.#shared.delete(workspaceId);
      }
      this.#kickLanes();
      this.#kick();
    }
  }

  /** Whether an event may go in the next statement: none of its workspace's is in flight, or the oldest has been for SAME_WORKSPACE_PATIENCE_MS. */
  #patient(pending: Pending, now: number): boolean {
    const shared = this.#shared.get(pending.workspaceId);
    return shared === undefined || now - shared.sinceMs >= SAME_WORKSPACE_PATIENCE_MS;
  }

  /** Looks again once the events held back for their workspace's statement in flight may go anyway. */
  #kickAfterPatience(): void {
    if (this.#patience) return;
    this.#patience = setTimeout(() => {
      this.#patience = undefined;
      this.#kick();
    }, SAME_WORKSPACE_PATIENCE_MS);
    this.#patience.unref();
  }

  /**
   * The next transaction's events from `queue`, in arrival order, among those `eligible` (the
   * others stay queued, in order). A second event with an id already in the batch (a client
   * retrying before its first try was answered) waits for a later transaction, which then finds
   * the first one stored (or, on Postgres, runs into it on the unique index and is run again by
   * Store.retryingTransient) and answers as an idempotent replay or a conflict.
   */
  #take(queue: Pending[], eligible: (pending: Pending) => boolean): Pending[] {
    const batch: Pending[] = [];
    const later: Pending[] = [];
    const ids = new Set<string>();
    for (const pending of queue) {
      const key = `${pending.workspaceId} ${pending.event.id}`;
      if (batch.length >= GROUP_COMMIT_MAX_EVENTS || ids.has(key) || !eligible(pending)) later.push(pending);
      else {
        ids.add(key);
        batch.push(pending);
      }
    }
    queue.splice(0, queue.length, ...later);
    return batch;
  }

  async #commit(batch: Pending[]): Promise<void> {
    const groups = byWorkspace(batch);
    const storedAt = this.clock.now().getTime();
    const appends = [...groups].map(([workspaceId, group]) => ({ workspaceId, events: group.map((p) => p.event) }));
    let result: Appended;
    this.heads?.appending(groups.keys());
    try {
      // Atomic alone, in each adapter's cheapest way (Postgres: one statement, no BEGIN and COMMIT;
      // SQLite: one synchronous transaction on the writing connection).
      // Traced, one span for the statement the batch's emits share, linked from each (inGroupCommitSpan).
      const append = () =>
        this.store.retryingTransient(() => appendPrepared(this.store, appends, storedAt, { skipLocked: this.store.appends.skipLocked }));
      result = await (batch.some((pending) => pending.span)
        ? inGroupCommitSpan(
            batch.map((pending) => pending.span),
            append,
          )
        : append());
    } catch (err) {
      this.heads?.appendSettled(groups.keys());
      for (const pending of batch) pending.reject(appendFailure(err, pending.event.id));
      return;
    }
    this.#answer(groups, result);
    this.heads?.appendSettled(groups.keys());
    for (const workspaceId of result.skipped) this.#toLane(workspaceId, groups.get(workspaceId)!);
  }

  /**
   * Sends a workspace whose counter row another transaction held to its lane: the skipped events,
   * then those still waiting for a shared transaction, in arrival order. Its later events go there
   * too until the lane is empty.
   */
  #toLane(workspaceId: string, skipped: Pending[]): void {
    const lane = this.#lanes.get(workspaceId) ?? [];
    lane.push(...skipped, ...this.#waiting.filter((pending) => pending.workspaceId === workspaceId));
    this.#waiting = this.#waiting.filter((pending) => pending.workspaceId !== workspaceId);
    this.#lanes.set(workspaceId, lane);
    this.#kickLanes();
  }

  #kickLanes(): void {
    for (const [workspaceId, lane] of this.#lanes) {
      if (this.#lanesRunning.size >= POSTGRES_LOCKED_WORKSPACES_WAITING) return;
      if (!this.#lanesRunning.has(workspaceId)) void this.#runLane(workspaceId, lane);
    }
  }

  /** One statement of a lane: its next events, waiting for the workspace's counter row (up to lock_timeout). */
  async #runLane(workspaceId: string, lane: Pending[]): Promise<void> {
    const batch = this.#take(lane, () => true);
    this.#lanesRunning.add(workspaceId);
    try {
      const events = batch.map((pending) => pending.event);
      const storedAt = this.clock.now().getTime();
      this.heads?.appending([workspaceId]);
      try {
        const result = await this.store.retryingTransient(() => appendPrepared(this.store, [{ workspaceId, events }], storedAt));
        this.#answer(new Map([[workspaceId, batch]]), result);
      } finally {
        this.heads?.appendSettled([workspaceId]);
      }
    } catch (err) {
      for (const pending of batch) pending.reject(appendFailure(err, pending.event.id));
    } finally {
      this.#lanesRunning.delete(workspaceId);
      if (lane.length === 0) this.#lanes.delete(workspaceId);
      this.#kickLanes();
    }
  }

  /** Answers the events of an append, but those of the workspaces it skipped. */
  #answer(groups: Map<string, Pending[]>, { outcomes, appended, skipped }: Appended): void {
    // Committed: a poll of this process after an emit's answer must find it, even before the
    // commit's notification comes back (FeedHeads); and tailing readers find the events
    // here rather than in the database (RecentEvents).
    for (const { workspaceId, firstSeq, events } of appended) {
      this.recent?.committed(workspaceId, firstSeq, events);
      this.heads?.heard(workspaceId, firstSeq + events.length - 1, new Set(events.map((event) => event.mailboxId)));
    }
    let answered = 0;
    [...groups.values()].forEach((group, g) => {
      if (skipped.includes(group[0]!.workspaceId)) return;
      answered += group.length;
      group.forEach((pending, i) => {
        const outcome = outcomes[g]![i]!;
        if (outcome instanceof ApiError) pending.reject(outcome);
        else pending.resolve(outcome);
      });
    });
    // Skipped events are counted with the lane's statement that carries them.
    if (answered > 0) this.onCommit?.({ events: answered, appended: appended.reduce((sum, append) => sum + append.events.length, 0) });
  }
}

/** The batch's events per workspace, in arrival order within each. */
function byWorkspace(batch: Pending[]): Map<string, Pending[]> {
  const groups = new Map<string, Pending[]>();
  for (const pending of batch) {
    const group = groups.get(pending.workspaceId);
    if (group) group.push(pending);
    else groups.set(pending.workspaceId, [pending]);
  }
  return groups;
}
