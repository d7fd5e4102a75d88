import type { Reservation } from '../limits/memory-budget.ts';
import type { ReadBudget } from './read-budget.ts';

/** How long a finished read may still answer reads woken, or requests arrived, before it began. */
const KEPT_MS = 200;
/** Reads kept at once. */
const KEPT_MAX = 1024;
/** What holding a page answered to a connection costs besides its bytes, which every poll sharing it writes from the same buffers. */
export const SHARED_ANSWER_OVERHEAD_BYTES = 4 * 1024;

/** What a read answers, as far as sharing it goes (the reader's FeedReadResult). */
interface Read {
  events: { bytes: Buffer };
}

/** A reservation held by a shared read and by every call answering from it: released when the last lets go. */
class SharedReservation {
  #holders = 1;
  constructor(private readonly reservation: Reservation) {}

  resize(bytes: number): void {
    this.reservation.resize(bytes);
  }

  /** Another call answers from the read: a share it lets go of once (the function returned). */
  share(): () => void {
    this.#holders++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release();
    };
  }

  release(): void {
    if (--this.#holders === 0) this.reservation.release();
  }
}

/** Who pays for a shared read's memory (the budget of the call that begins it), and whether it is a woken held read's. */
export interface SharedMemory {
  budget: ReadBudget;
  woken: boolean;
}

interface Shared<R extends Read> {
  /** When the read began (performance.now()); Infinity while it waits for its memory. */
  began: { at: number };
  result: Promise<R>;
  memory?: Promise<SharedReservation | undefined>;
}

/**
 * Reads of held polls woken by the same commit, shared. When a commit wakes the hundred polls of
 * one workspace waiting after the same cursor, they would make a hundred identical reads (on an
 * instance woken by another's notification, a hundred round trips to Postgres), each reserving a
 * page's worst case first, a few at a time per workspace. A woken read may take the answer of an
 * identical read (same workspace, cursor, limit, scope and facts) that BEGAN after the wake: that
 * read sees every commit the wake announced, which is all a held poll is owed (it is answered when
 * something new is there; what comes after is the next poll's). A request's first read, once it
 * knows it has a page to read, shares the same way a read begun after the request ARRIVED (the
 * followers of a workspace asking again after the same cursor): such a read sees every commit made
 * before the request, which is all an ordinary poll is owed.
 *
 * Memory: the read reserves a page's worst case once (ReadBudget.admitShared, of the call that began it), resized to the page
 * it read, and that one reservation is held by every call answering from it, until the last one's
 * answer is written: the page is in memory once, and its answers are written from the same buffers
 * (feedPageJson gives them all the same chunks).
 */
export class SharedReads<R extends Read> {
  readonly #reads = new Map<string, Shared<R>>();

  /**
   * `read`'s answer, or that of an identical read (same `key`) begun at or after `since`. A finished
   * read is kept `keptMs` for those who come later but woke before it began (KEPT_MS: polls woken
   * by one commit resume one by one); 0 for requests' first reads, which only those who arrived
   * before it began may share: they have joined by the time it ends.
   */
  async read(key: string, since: number, read: () => Promise<R>, memory?: SharedMemory, keptMs = KEPT_MS): Promise<R> {
    let shared = this.#reads.get(key);
    if (!shared || shared.began.at < since) shared = this.#start(key, read, memory, keptMs);
    const [result, reservation] = await Promise.all([shared.result, shared.memory]);
    if (reservation && memory) memory.budget.keepShare(reservation.share());
    return result;
  }

  #start(key: string, read: () => Promise<R>, memory: SharedMemory | undefined, keptMs: number): Shared<R> {
    const admitted = memory ? memory.budget.admitShared(memory.woken).then((reservation) => new SharedReservation(reservation)) : undefined;
    // Begun once its memory is admitted: until then, whoever comes may still share it.
    const began = { at: Infinity };
    const begin = () => {
      began.at = performance.now();
      return read();
    };
    const result = admitted ? admitted.then(begin) : begin();
    const entry: Shared<R> = { began, result, memory: admitted };
    if (this.#reads.size >= KEPT_MAX) this.#reads.delete(this.#reads.keys().next().value!);
    this.#reads.set(key, entry);
    const forget = () => {
      if (this.#reads.get(key) === entry) this.#reads.delete(key);
      // The entry's own hold: the calls that took the answer keep theirs.
      void admitted?.then(
        (reservation) => reservation.release(),
        () => undefined,
      );
    };
    result.then((page) => {
      void admitted?.then((reservation) => reservation.resize(page.events.bytes.length + SHARED_ANSWER_OVERHEAD_BYTES));
      // After a timer, never sooner: whoever joined has taken its own hold (a microtask) by then.
      setTimeout(forget, keptMs).unref();
    }, forget);
    return entry;
  }
}
