import { randomBytes } from 'node:crypto';
import type { Logger } from '../base/log.ts';
import type { ErasureRow, ErasureStore, FeedStore } from '../store/port.ts';
import type { ErasureKeys } from './addresses.ts';
import { redactEnvelope } from './redact.ts';

export interface ErasureRunnerOptions {
  /** How many seqs one batch looks at (its read, then one short write of what it changed). */
  batchSeqs?: number;
  /** How long a lease lasts without renewal: another instance takes over an erasure left that long. */
  leaseMs?: number;
  /** How often the runner looks for erasures to pick up (others' requests, leases left by a dead instance). */
  pollMs?: number;
  /** A pause between batches, so that appends and reads always get their turn. */
  pauseMs?: number;
  now?: () => number;
  log?: Logger;
}

/**
 * Runs the erasures erase_person asks for, on any instance: one at a time per instance, each held
 * by a lease (ErasureStore.claim) so that one instance runs it, resumed from its persisted
 * progress (cursor_seq) by whoever takes it next, after a restart or a dead instance's lease.
 *
 * An erasure walks its workspace's seqs in ranges of `batchSeqs`: a plain read of the range's
 * events whose text holds an address (no transaction, so no read or append waits for it), the
 * redaction in memory (redactEnvelope), then one short transaction writing the changed events and
 * the progress together, refused if the lease was lost. Doing a batch again finds nothing more to
 * change, so a batch cut short by a crash is simply done again: the erasure is idempotent. After
 * each batch, `rewrote` tells this process's caches (FeedReader.forget); other instances learn it
 * from the erasures' progress (watchErasures).
 */
export class ErasureRunner {
  readonly #owner = `erasure-${randomBytes(6).toString('hex')}`;
  readonly #batchSeqs: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #pauseMs: number;
  readonly #now: () => number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(
    private readonly store: ErasureStore & Pick<FeedStore, 'feedHead'>,
    private readonly keys: ErasureKeys,
    private readonly rewrote: (workspaceId: string) => void,
    options: ErasureRunnerOptions = {},
  ) {
    this.#batchSeqs = options.batchSeqs ?? 5000;
    this.#leaseMs = options.leaseMs ?? 30_000;
    this.#pollMs = options.pollMs ?? 5000;
    this.#pauseMs = options.pauseMs ?? 0;
    this.#now = options.now ?? Date.now;
    this.log = options.log;
  }

  private log: Logger | undefined;

  /** Picks up unfinished erasures now and every `pollMs` until stopped, logging to `log`. */
  start(log?: Logger): void {
    if (log) this.log = log;
    this.#stopped = false;
    const tick = () => {
      this.kick();
      this.#timer = setTimeout(tick, this.#pollMs);
      this.#timer.unref();
    };
    tick();
  }

  /** Runs what is unfinished now (a new erasure was asked for). */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#runAll()
      .catch((err: unknown) => this.log?.warn({ error_kind: (err as Error)?.name }, 'erasure: a batch failed; retried at the next poll'))
      .finally(() => {
        this.#running = undefined;
        if (this.#again && !this.#stopped) {
          this.#again = false;
          this.kick();
        }
      });
  }

  /** Resolves once nothing is running (tests; the erasure left unfinished resumes on the next start). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** Resolves when nothing is left to run by this instance now (tests). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  async #runAll(): Promise<void> {
    for (const erasure of await this.store.erasures.unfinished()) {
      if (this.#stopped) return;
      await this.#run(erasure);
    }
  }

  async #run(erasure: ErasureRow): Promise<void> {
    if (!(await this.store.erasures.claim(erasure.id, this.#owner, this.#now(), this.#now() + this.#leaseMs))) return;
    if (erasure.sealedAddresses === null) return;
    const addresses = new Set(this.keys.unseal(erasure.sealedAddresses));
    const needles = [...addresses];
    let cursor = erasure.cursorSeq;
    this.log?.info(
      { erasure_id: erasure.id, workspace_id: erasure.workspaceId, from_seq: cursor, through_seq: erasure.throughSeq },
      'erasure: running',
    );
    for (;;) {
      if (this.#stopped) return;
      const through = Math.min(cursor + this.#batchSeqs, erasure.throughSeq);
      const rewrites = [];
      for (const event of await this.store.erasures.candidates(erasure.workspaceId, cursor, through, needles)) {
        const erased = redactEnvelope(event.envelope, addresses);
        if (erased !== undefined) rewrites.push({ seq: event.seq, envelope: erased });
      }
      const done = through >= erasure.throughSeq;
      const now = this.#now();
      const written = await this.store.erasures.commitBatch({
        id: erasure.id,
        workspaceId: erasure.workspaceId,
        owner: this.#owner,
        rewrites,
        cursorSeq: through,
        now,
        done,
      });
      if (!written) {
        this.log?.warn({ erasure_id: erasure.id }, 'erasure: lease lost; another instance continues it');
        return;
      }
      if (rewrites.length > 0 || done) this.rewrote(erasure.workspaceId);
      cursor = through;
      if (done) {
        const finished = await this.store.erasures.byId(erasure.workspaceId, erasure.id);
        this.log?.info(
          { erasure_id: erasure.id, workspace_id: erasure.workspaceId, events_erased: finished?.eventsErased },
          'erasure: completed',
        );
        return;
      }
      if (!(await this.store.erasures.claim(erasure.id, this.#owner, now, now + this.#leaseMs))) return;
      await new Promise((resolve) => (this.#pauseMs > 0 ? setTimeout(resolve, this.#pauseMs) : setImmediate(resolve)));
    }
  }
}
