import type { EmitEventRequest } from '../../generated/types.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { dbKind, type Db } from '../store/db.ts';
import type { NewEvent } from '../store/events.ts';
import { writeTransaction } from '../store/write-transaction.ts';
import { appendPrepared, prepareEvent, type PublishedEvent } from './publish.ts';

/** The most events one shared transaction takes; the rest wait for the next one. */
export const GROUP_COMMIT_MAX_EVENTS = 256;

interface Pending {
  workspaceId: string;
  event: NewEvent;
  resolve(published: PublishedEvent): void;
  reject(err: unknown): void;
}

/**
 * Group commit for emit_event: appends that arrive while a transaction is being committed wait
 * for it, then share the next one. A transaction costs far more than an insert (the counter row
 * lock, a WAL write or an fsync, several round trips), so under load many events share that cost;
 * alone, an append commits at once, without waiting for company.
 *
 * Each event keeps its own answer: an idempotency conflict fails that event only; a failed
 * transaction (run again first when its error is transient, see writeTransaction) fails the events
 * it carried. Events are appended in arrival order, so one client's successive emits keep their order.
 *
 * Lanes: on Postgres, one per workspace (workspaces commit in parallel on their own connections;
 * appends to one workspace are serialized by its counter row anyway). On SQLite, one for all: there
 * is a single writer, and one transaction for several workspaces beats several in a row.
 */
export class GroupCommit {
  readonly #waiting = new Map<string, Pending[]>();
  readonly #committing = new Set<string>();
  readonly #oneLane: boolean;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {
    this.#oneLane = dbKind(db) === 'sqlite';
  }

  /** Appends one event to a workspace's feed once its transaction commits. */
  append(workspaceId: string, input: EmitEventRequest): Promise<PublishedEvent> {
    // Built before waiting, outside any transaction: a bad occurred_at fails here, alone.
    const event = prepareEvent(workspaceId, input, this.clock.now());
    const lane = this.#oneLane ? '' : workspaceId;
    return new Promise((resolve, reject) => {
      const waiting = this.#waiting.get(lane);
      if (waiting) waiting.push({ workspaceId, event, resolve, reject });
      else this.#waiting.set(lane, [{ workspaceId, event, resolve, reject }]);
      if (!this.#committing.has(lane)) {
        this.#committing.add(lane);
        // Let the appends that arrived in the same turn of the event loop join the first transaction.
        setImmediate(() => void this.#drain(lane));
      }
    });
  }

  async #drain(lane: string): Promise<void> {
    for (;;) {
      const batch = this.#take(lane);
      if (batch.length === 0) break;
      await this.#commit(batch);
    }
    this.#committing.delete(lane);
  }

  /**
   * The next transaction's events, in arrival order. A second event with an id already in the batch
   * (a client retrying before its first try was answered) waits for the next transaction, which
   * then sees the first one stored and answers as an idempotent replay or a conflict.
   */
  #take(lane: string): Pending[] {
    const waiting = this.#waiting.get(lane) ?? [];
    const batch: Pending[] = [];
    const later: Pending[] = [];
    const ids = new Set<string>();
    for (const pending of waiting) {
      const key = `${pending.workspaceId} ${pending.event.id}`;
      if (batch.length >= GROUP_COMMIT_MAX_EVENTS || ids.has(key)) later.push(pending);
      else {
        ids.add(key);
        batch.push(pending);
      }
    }
    if (later.length > 0) this.#waiting.set(lane, later);
    else this.#waiting.delete(lane);
    return batch;
  }

  async #commit(batch: Pending[]): Promise<void> {
    // One workspace after another in sorted order: counter row locks are always taken in one order.
    const byWorkspace = new Map<string, Pending[]>();
    for (const pending of batch) {
      const group = byWorkspace.get(pending.workspaceId);
      if (group) group.push(pending);
      else byWorkspace.set(pending.workspaceId, [pending]);
    }
    const workspaces = [...byWorkspace.keys()].sort();
    try {
      const outcomes = await writeTransaction(this.db, async (trx) => {
        const storedAt = this.clock.now().getTime();
        const all = new Map<Pending, PublishedEvent | ApiError>();
        for (const workspaceId of workspaces) {
          const group = byWorkspace.get(workspaceId)!;
          const results = await appendPrepared(trx, workspaceId, group.map((p) => p.event), storedAt);
          group.forEach((pending, i) => all.set(pending, results[i]!));
        }
        return all;
      });
      for (const [pending, outcome] of outcomes) {
        if (outcome instanceof ApiError) pending.reject(outcome);
        else pending.resolve(outcome);
      }
    } catch (err) {
      for (const pending of batch) pending.reject(err);
    }
  }
}
