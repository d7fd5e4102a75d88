import type { PageQuery, StoredPage } from '../port.ts';

const KEPT = 8;
const TTL_MS = 2000;
// Reads ahead at once: each holds a database connection, and nobody is waiting for it yet.
const RUNNING_MAX = 2;

interface Pending {
  startedMs: number;
  cancelled: boolean;
  page?: Promise<StoredPage>;
}

const keyOf = (q: PageQuery) =>
  `${q.workspaceId} ${q.afterSeq} ${q.limit} ${q.withFacts ? 'f' : ''} ${q.mailboxes === null ? '*' : q.mailboxes.join(',')}`;

/**
 * Read-ahead for readers catching up: after a whole page (isWhole), the next
 * one (same key scope, same limit, after the last seq) is read as soon as the event loop is free,
 * i.e. while this page is on its way to the client and the client parses it; the reader's next
 * call then takes it instead of reading. A reader that catches up sequentially alternates with its
 * client, so this overlaps the two.
 *
 * Only a whole prefetched page is ever served: seq values are handed out in commit order, so the
 * events after a position never change once visible, and a page that holds `limit` events or
 * stopped at the byte cap is the page a read now would give, but for retention: it may have
 * removed them since. The page is therefore marked `prefetched`, and the caller checks the
 * retention watermark itself instead of trusting the page (assertCursorNotExpired). A page still short
 * may grow, and is read again. At most KEPT pages are held per database, none for longer than
 * TTL_MS, and at most RUNNING_MAX are being read at once (the others are not read ahead: readers
 * who cannot be served ahead are served when they ask); a prefetch that the reader overtakes is
 * cancelled before it runs.
 */
export class ReadAhead {
  readonly #pending = new Map<string, Pending>();
  #running = 0;

  constructor(private readonly read: (q: PageQuery) => Promise<StoredPage>) {}

  /** The page read ahead for exactly this query, when it is whole and fresh; undefined otherwise. */
  async take(q: PageQuery): Promise<StoredPage | undefined> {
    const key = keyOf(q);
    const ahead = this.#pending.get(key);
    if (!ahead) return undefined;
    this.#pending.delete(key);
    ahead.cancelled = true;
    if (!ahead.page || performance.now() - ahead.startedMs > TTL_MS) return undefined;
    const page = await ahead.page.catch(() => undefined);
    return page && (page.count === q.limit || page.cutAtByteCap) ? { ...page, prefetched: true } : undefined;
  }

  /** Drops what was read ahead of `workspaceId`'s feed (its events were rewritten: an erasure). */
  forget(workspaceId: string): void {
    for (const [key, ahead] of this.#pending) {
      if (!key.startsWith(`${workspaceId} `)) continue;
      ahead.cancelled = true;
      this.#pending.delete(key);
    }
  }

  schedule(q: PageQuery): void {
    const key = keyOf(q);
    if (this.#pending.has(key)) return;
    const ahead: Pending = { startedMs: performance.now(), cancelled: false };
    this.#pending.set(key, ahead);
    if (this.#pending.size > KEPT) {
      const oldest = this.#pending.keys().next().value!;
      this.#pending.get(oldest)!.cancelled = true;
      this.#pending.delete(oldest);
    }
    setImmediate(() => {
      if (ahead.cancelled) return;
      if (this.#running >= RUNNING_MAX) {
        if (this.#pending.get(key) === ahead) this.#pending.delete(key);
        return;
      }
      this.#running++;
      ahead.startedMs = performance.now();
      ahead.page = this.read(q);
      // A failed read-ahead is forgotten: the reader's own read will report the error, if any.
      ahead.page.then(
        () => this.#running--,
        () => {
          this.#running--;
          if (this.#pending.get(key) === ahead) this.#pending.delete(key);
        },
      );
    });
  }
}
