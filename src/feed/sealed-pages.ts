import { isWhole, type StoredPage } from '../store/port.ts';

/** One page's place in the feed: who may read it and from where (FeedReader keys reads the same way). */
export interface SealedPageKey {
  workspaceId: string;
  afterSeq: number;
  limit: number;
  /** The key's mailboxes, sorted, or null for the whole feed. */
  mailboxes: readonly string[] | null;
  withFacts: boolean;
}

/**
 * Pages that can no longer change, kept as read, so that readers replaying the same history (a new
 * consumer catching up, many followers starting from one cursor) are answered from memory: the
 * page's bytes and, through `feedPageJson`'s memo of a page, its encoded answer too.
 *
 * A page is sealed once it is whole (`isWhole`: `limit` events, or stopped at the byte cap): seqs
 * are handed out in commit order (ordering.md), so no later commit can put an event inside it. Only
 * retention changes it, by removing a prefix of the feed: a page from here is marked `prefetched`,
 * which makes `assertCursorNotExpired` ask the watermark unless its events are too young for any
 * prune, exactly as for a page read ahead of its request.
 *
 * Bounded: `maxBytes` in all, a quarter of it per workspace, so that one tenant's replay cannot
 * push every other tenant's pages out; the least recently used go first (a Map keeps insertion
 * order, and a hit moves its entry to the end).
 */
export class SealedPages {
  readonly #pages = new Map<string, { page: StoredPage; workspaceId: string; bytes: number }>();
  readonly #bytesOf = new Map<string, number>();
  #bytes = 0;
  readonly #perWorkspace: number;

  constructor(private readonly maxBytes: number) {
    this.#perWorkspace = Math.floor(maxBytes / 4);
  }

  get(key: SealedPageKey): StoredPage | undefined {
    if (this.maxBytes === 0) return undefined;
    const id = idOf(key);
    const entry = this.#pages.get(id);
    if (entry === undefined) return undefined;
    this.#pages.delete(id);
    this.#pages.set(id, entry);
    return entry.page;
  }

  /** Keeps a page just read from storage, when it is sealed and fits. */
  keep(key: SealedPageKey, page: StoredPage): void {
    if (!isWhole(page, key.limit) || page.count === 0) return;
    const bytes = page.bytes.length + (page.facts ? page.count * FACT_BYTES : 0) + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.#perWorkspace) return;
    const id = idOf(key);
    if (this.#pages.has(id)) return;
    while ((this.#bytesOf.get(key.workspaceId) ?? 0) + bytes > this.#perWorkspace) this.#evictOldest(key.workspaceId);
    while (this.#bytes + bytes > this.maxBytes) this.#evictOldest();
    // As if read ahead of the request it will answer: the expiry check asks whether a prune came since.
    const sealed: StoredPage = { ...page, prefetched: true };
    this.#pages.set(id, { page: sealed, workspaceId: key.workspaceId, bytes });
    this.#bytes += bytes;
    this.#bytesOf.set(key.workspaceId, (this.#bytesOf.get(key.workspaceId) ?? 0) + bytes);
  }

  /** Forgets the workspace's pages (its stored events were rewritten: an erasure). */
  forget(workspaceId: string): void {
    for (const [id, entry] of this.#pages) {
      if (entry.workspaceId !== workspaceId) continue;
      this.#pages.delete(id);
      this.#bytes -= entry.bytes;
    }
    this.#bytesOf.delete(workspaceId);
  }

  /** Bytes held (tests, metrics). */
  get bytes(): number {
    return this.#bytes;
  }

  /** The least recently used page (of `workspaceId` only, when given). */
  #evictOldest(workspaceId?: string): void {
    for (const [id, entry] of this.#pages) {
      if (workspaceId !== undefined && entry.workspaceId !== workspaceId) continue;
      this.#pages.delete(id);
      this.#bytes -= entry.bytes;
      const left = (this.#bytesOf.get(entry.workspaceId) ?? 0) - entry.bytes;
      if (left > 0) this.#bytesOf.set(entry.workspaceId, left);
      else this.#bytesOf.delete(entry.workspaceId);
      return;
    }
  }
}

/** What a page's facts (type, time, seq of each event) cost beside its bytes, roughly. */
const FACT_BYTES = 96;
const ENTRY_OVERHEAD_BYTES = 256;

const idOf = (key: SealedPageKey) =>
  `${key.workspaceId} ${key.afterSeq} ${key.limit} ${key.withFacts ? 'f' : ''} ${key.mailboxes?.join(',') ?? '*'}`;
