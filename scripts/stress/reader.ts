/**
 * A tailing reader: random workspace, random page size (1..500), cursor kept per workspace.
 * Now and then it "acknowledges" (saves its cursor, as a consumer would persist it with its own
 * work) and now and then it "crashes": everything received after the saved cursors is dropped and
 * reading resumes from them. Acknowledged positions must never come again and nothing may be skipped:
 * the checker sees either as a duplicate or a loss.
 */
import type { Knex } from 'knex';
import { between, pick, readPrincipal, sleep, type FeedStore, type ReaderResult, type ReaderSpec } from './model.ts';

interface WsState {
  cursor: string | undefined;
  saved: string | undefined;
  acked: string[];
  pending: string[];
  pageEnds: Array<[number, string]>;
}

export interface ReaderOptions {
  /** Per page: chance of saving the cursor (acknowledging what was received). */
  ackProbability?: number;
  /** Per page: chance of a simulated crash (back to the saved cursors). */
  restartProbability?: number;
}

const pageSize = () => (Math.random() < 0.5 ? between(1, 20) : between(1, 500));

export class FeedReader {
  readonly #state = new Map<string, WsState>();
  #pages = 0;
  #restarts = 0;
  #redelivered = 0;
  #errors = 0;
  #consecutiveErrors = 0;

  constructor(
    readonly spec: ReaderSpec,
    readonly workspaces: string[],
    readonly store: FeedStore,
    readonly db: Knex,
    readonly options: ReaderOptions = {},
  ) {
    for (const ws of workspaces) this.#state.set(ws, { cursor: undefined, saved: undefined, acked: [], pending: [], pageEnds: [] });
  }

  /** One page of one workspace; returns how many events it got (-1 on error). */
  async step(ws: string, tailing: boolean): Promise<number> {
    const s = this.#state.get(ws)!;
    let page;
    try {
      page = await this.store.read(this.db, readPrincipal(ws, this.spec.mailboxes), s.cursor, pageSize());
      this.#consecutiveErrors = 0;
    } catch (err) {
      this.#errors++;
      if (++this.#consecutiveErrors > 200)
        throw new Error(`reader ${this.spec.name}: 200 consecutive errors, last: ${(err as Error).message}`);
      await sleep(5);
      return -1;
    }
    this.#pages++;
    for (const e of page.events) s.pending.push(e.id);
    s.cursor = page.nextCursor;
    if (page.events.length) s.pageEnds.push([this.store.cursorKey(ws, page.nextCursor), page.events.at(-1)!.id]);
    if (Math.random() < (this.options.ackProbability ?? 0.5)) this.#ack(s);
    if (tailing && Math.random() < (this.options.restartProbability ?? 0.02)) this.#crash();
    return page.events.length;
  }

  /** Tails until `done()` turns true, then drains every workspace to its head. */
  async run(done: () => boolean): Promise<void> {
    while (!done()) {
      const got = await this.step(pick(this.workspaces), true);
      if (got <= 0) await sleep(between(1, 8));
    }
    await this.drain();
  }

  async drain(): Promise<void> {
    for (const ws of this.workspaces) {
      while ((await this.step(ws, false)) !== 0);
      this.#ack(this.#state.get(ws)!);
    }
  }

  #ack(s: WsState) {
    s.acked.push(...s.pending);
    s.pending = [];
    s.saved = s.cursor;
  }

  #crash() {
    this.#restarts++;
    for (const s of this.#state.values()) {
      this.#redelivered += s.pending.length;
      s.pending = [];
      s.cursor = s.saved;
    }
  }

  result(): ReaderResult {
    const acked: ReaderResult['acked'] = {};
    const pageEnds: ReaderResult['pageEnds'] = {};
    for (const [ws, s] of this.#state) {
      acked[ws] = s.acked;
      pageEnds[ws] = s.pageEnds;
    }
    return {
      name: this.spec.name,
      mailboxes: this.spec.mailboxes,
      acked,
      pageEnds,
      pages: this.#pages,
      restarts: this.#restarts,
      redelivered: this.#redelivered,
      errors: this.#errors,
    };
  }
}
