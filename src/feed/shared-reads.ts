/** A page this small is kept for others woken by the same commit after its read ended; a larger one only shared while in flight. */
const KEPT_PAGE_MAX_BYTES = 64 * 1024;
/** How long a finished read may still answer reads woken before it began. */
const KEPT_MS = 200;
/** Reads kept at once (each at most KEPT_PAGE_MAX_BYTES). */
const KEPT_MAX = 1024;

/** What a read answers, as far as sharing it goes (the reader's FeedReadResult). */
interface Read {
  events: { bytes: Buffer };
}

interface Shared<R extends Read> {
  startedAt: number;
  result: Promise<R>;
}

/**
 * Reads of held polls woken by the same commit, shared. When a commit wakes the ten polls of one
 * workspace waiting after the same cursor, they would make ten identical reads (on an instance
 * woken by another's notification, ten round trips to Postgres). A woken read may take the
 * answer of an identical read (same workspace, cursor, limit, scope and facts) that BEGAN after
 * the wake: that read sees every commit the wake announced, which is all a held poll is owed (it is
 * answered when something new is there; what comes after is the next poll's). Reads that were not
 * woken never share: an ordinary poll must see every commit made before it arrived.
 */
export class SharedReads<R extends Read> {
  readonly #reads = new Map<string, Shared<R>>();

  read(key: string, wokenAt: number, read: () => Promise<R>): Promise<R> {
    const shared = this.#reads.get(key);
    if (shared && shared.startedAt >= wokenAt) return shared.result;
    const entry: Shared<R> = { startedAt: performance.now(), result: read() };
    if (this.#reads.size >= KEPT_MAX) this.#reads.delete(this.#reads.keys().next().value!);
    this.#reads.set(key, entry);
    const forget = () => {
      if (this.#reads.get(key) === entry) this.#reads.delete(key);
    };
    entry.result.then(
      (result) => (result.events.bytes.length <= KEPT_PAGE_MAX_BYTES ? setTimeout(forget, KEPT_MS).unref() : forget()),
      forget,
    );
    return entry.result;
  }
}
