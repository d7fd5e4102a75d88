import { systemClock, type Clock } from '../base/clock.ts';
import { isWhole, type StoredPage } from '../store/port.ts';
import { assertCursorNotExpired, assertCursorNotPastHead } from './expiry.ts';
import type { FeedHeads } from './heads.ts';
import type { RecentEvents } from './recent-events.ts';
import type { FeedScope } from './scope.ts';
import type { SealedPages } from './sealed-pages.ts';
import type { ReadBudget } from './read-budget.ts';
import { SharedReads } from './shared-reads.ts';
import type { FeedStorage } from './storage.ts';

/** One read of a workspace's feed. */
export interface FeedRead {
  workspaceId: string;
  scope: FeedScope;
  /** The cursor's seq; undefined: from the oldest retained event. */
  afterSeq: number | undefined;
  limit: number;
  /** Also each event's type and time (the MCP text), read with the page. */
  withFacts: boolean;
  /** A held read woken at this time (performance.now()): it may share an identical read begun since (SharedReads). */
  wokenAt?: number;
  /**
   * A request's first read, arrived at this time (performance.now()): when it has a page to read,
   * it may share an identical read begun since (SharedReads). Only followers (held polls) share
   * theirs: for a plain read the sharing costs a replay's page more than it saves.
   */
  arrivedAt?: number;
  /** Who pays for the read (its page's memory, alone or shared: ReadBudget); absent, nothing is admitted (in-process reads). */
  budget?: ReadBudget;
}

export interface FeedReadResult {
  events: StoredPage;
  /** The seq the page was read after: the cursor's, or without one the retention watermark (the oldest retained event's predecessor). */
  afterSeq: number;
}

const NOTHING: StoredPage = { bytes: Buffer.alloc(0), count: 0, lastSeq: undefined, cutAtByteCap: false };

const FIRST_PAGE_ATTEMPTS = 3;

/**
 * Reads the feed the way a read of the database at that moment would answer, taking every
 * shortcut that cannot tell the difference. What may answer, by scope (FeedScope):
 * - the heads (FeedHeads): "nothing new" without a query, for any scope (nothing past the
 *   cursor in the workspace is nothing in its mailboxes either);
 * - the events this process just committed (RecentEvents), filtered by scope;
 * - storage, whose page is then checked against retention (assertCursorNotExpired: a whole-feed page that
 *   holds the event right after the cursor proves it itself; any other asks the watermark) and,
 *   when it is a short page of the whole feed holding every seq after the cursor, teaches the
 *   heads where the workspace's head is.
 * Storage is read through `storage` alone (FeedStorage).
 */
export class FeedReader {
  readonly #shared = new SharedReads<FeedReadResult>();
  /** Per workspace, how many times its stored events were rewritten (forget): a page read across one is not kept. */
  readonly #rewrites = new Map<string, number>();

  constructor(
    private readonly storage: FeedStorage,
    private readonly heads: FeedHeads,
    private readonly recent?: RecentEvents,
    /** Retention prunes by the service's clock (schedulePruning): the age of a page read ahead is judged by it too. */
    private readonly clock: Clock = systemClock,
    /** Pages that can no longer change, kept to answer the next reader of the same place. */
    private readonly sealed?: SealedPages,
  ) {}

  /**
   * The workspace's stored events were rewritten in place (an erasure, ErasureRunner): what this
   * reader keeps of them (RecentEvents, SealedPages) is forgotten, and a page being read while it
   * happened is not kept.
   */
  forget(workspaceId: string): void {
    this.#rewrites.set(workspaceId, (this.#rewrites.get(workspaceId) ?? 0) + 1);
    this.recent?.forget(workspaceId);
    this.sealed?.forget(workspaceId);
  }

  async read(r: FeedRead): Promise<FeedReadResult> {
    if (r.wokenAt === undefined) return this.#read(r, true);
    // A woken read's memory is the shared read's, admitted once for all the calls that share it.
    const memory = r.budget && { budget: r.budget, woken: true };
    return this.#shared.read(sharedKeyOf(r), r.wokenAt, () => this.#read(r, false), memory);
  }

  /** `ownPage`: the read admits its own page's memory before reading one (not a shared read's, admitted for it). */
  async #read(r: FeedRead, ownPage: boolean): Promise<FeedReadResult> {
    // Taken as the request arrives: "nothing new" below counts every commit made before it.
    const ticket = this.heads.ticket();
    if (r.afterSeq === undefined) return this.#fromOldest(r, ownPage);
    const { workspaceId, scope, afterSeq, limit, withFacts } = r;

    // Nothing new: a cursor at the head cannot have expired either (retention never passes the
    // head), so when this process knows the head no query is needed (FeedHeads), counting
    // every commit made before this request arrived.
    if (await this.heads.nothingAfterNow(workspaceId, afterSeq, ticket)) {
      const head = this.heads.known(workspaceId);
      if (head !== undefined) assertCursorNotPastHead(head, afterSeq);
      return { events: NOTHING, afterSeq };
    }
    // Followers of one workspace asking again after the same cursor (a commit answered their held
    // polls, and each asks for what came next) share the page read, its memory and its answer, as
    // woken polls do: a read begun after this request arrived, with a ticket taken as it began,
    // counts every commit made before this request. (A woken read is already shared whole: read.)
    if (r.arrivedAt !== undefined && r.budget && r.wokenAt === undefined) {
      const memory = { budget: r.budget, woken: false };
      return this.#shared.read(sharedKeyOf(r), r.arrivedAt, () => this.#page(r, afterSeq, this.heads.ticket()), memory, 0);
    }
    if (ownPage) await r.budget?.admitPage();
    return this.#page(r, afterSeq, ticket);
  }

  /** The page after `afterSeq`: from recent events when they hold it, else from storage (or a sealed page); `ticket` as `heads.ticket()` gave it before. */
  async #page(r: FeedRead, afterSeq: number, ticket: ReturnType<FeedHeads['ticket']>): Promise<FeedReadResult> {
    const { workspaceId, scope, limit, withFacts } = r;
    // Just written by this process: the page, whole, from memory (RecentEvents); a short
    // one only once the heads counted every commit made before this request, like the answer above.
    const recent = this.recent?.page(workspaceId, afterSeq, limit, scope, withFacts);
    if (
      recent &&
      (recent.wholeIfNothingAfter === undefined || (await this.heads.nothingAfterNow(workspaceId, recent.wholeIfNothingAfter, ticket)))
    ) {
      return { events: recent.page, afterSeq };
    }

    const mark = this.heads.mark();
    const startedAt = this.heads.now();
    // A page that can no longer change, already read for someone (SealedPages).
    const place = { workspaceId, afterSeq, limit, mailboxes: scope.mailboxes, withFacts };
    const sealed = this.sealed?.get(place);
    const rewrites = this.#rewrites.get(workspaceId);
    const page = sealed ?? (await this.storage.readPage({ ...place, catchUp: this.#catchingUp(workspaceId, afterSeq, limit) }));
    // Refused if retention removed events after the cursor (assertCursorNotExpired); past this, an
    // empty page means nothing is after the cursor.
    await assertCursorNotExpired(this.storage, workspaceId, scope, afterSeq, page, this.clock.now().getTime());
    if (sealed === undefined && this.#rewrites.get(workspaceId) === rewrites) this.sealed?.keep(place, page);
    // An empty page is also what a cursor past the head reads: proven otherwise by a head known at
    // or past the cursor, else by the stored one (read after the page: heads only rise).
    if (page.count === 0 && !((this.heads.known(workspaceId) ?? -1) >= afterSeq))
      assertCursorNotPastHead(await this.storage.feedHead(workspaceId), afterSeq);
    this.#learnHead(r, afterSeq, page, mark, startedAt);
    return { events: page, afterSeq };
  }

  /**
   * Without a cursor: the page starting at the oldest retained event. Retention may prune between
   * reading its watermark and reading the page (then the page starts later, or is empty because the
   * whole range it looked at is gone): the watermark is read again and the page with it.
   */
  async #fromOldest(r: FeedRead, ownPage: boolean): Promise<FeedReadResult> {
    const { workspaceId, scope, limit, withFacts } = r;
    if (ownPage) await r.budget?.admitPage();
    for (let attempt = 1; ; attempt++) {
      const mark = this.heads.mark();
      const startedAt = this.heads.now();
      const afterSeq = await this.storage.prunedThrough(workspaceId);
      const page = await this.storage.readPage({
        workspaceId,
        afterSeq,
        limit,
        mailboxes: scope.mailboxes,
        withFacts,
        catchUp: this.#catchingUp(workspaceId, afterSeq, limit),
      });
      // A whole-feed page with events shows for itself where it starts; otherwise the watermark,
      // read again, tells whether a prune came in between.
      const startsAtOldest =
        scope.whole && page.count > 0 ? scope.readRightAfter(afterSeq, page) : (await this.storage.prunedThrough(workspaceId)) === afterSeq;
      if (startsAtOldest) this.#learnHead(r, afterSeq, page, mark, startedAt);
      // Nothing for a restricted key: where it stands is its own mailboxes' watermark, not the
      // workspace's (which moves as retention prunes other mailboxes' events); no event of its
      // mailboxes lies between the two (each pruned one is at or below the former).
      if (startsAtOldest && page.count === 0 && scope.mailboxes !== null)
        return { events: page, afterSeq: Math.min(afterSeq, await this.storage.prunedThroughMailboxes(workspaceId, scope.mailboxes)) };
      if (startsAtOldest || attempt === FIRST_PAGE_ATTEMPTS) return { events: page, afterSeq };
    }
  }

  /**
   * Whether a read after `afterSeq` is likely a page or more behind the head, so that a read replica
   * may serve it (ReadReplicas; only a whole page is taken from one): the head is at
   * least a page ahead, or this process does not know it (a replay of a workspace it has not seen).
   */
  #catchingUp(workspaceId: string, afterSeq: number, limit: number): boolean {
    const head = this.heads.atLeast(workspaceId);
    return head === undefined || head - afterSeq >= limit;
  }

  /** A short page of the whole feed, read now (begun at `mark`) and holding every seq after the cursor, saw the workspace's head. */
  #learnHead(r: FeedRead, afterSeq: number, page: StoredPage, mark: number | undefined, startedAt: number): void {
    if (!page.prefetched && !isWhole(page, r.limit) && r.scope.readRightAfter(afterSeq, page)) {
      this.heads.learn(r.workspaceId, page.lastSeq ?? afterSeq, mark, startedAt);
    }
  }
}

/** Reads that may share one answer: same workspace, cursor, limit, facts and scope. */
const sharedKeyOf = (r: FeedRead) =>
  `${r.workspaceId} ${r.afterSeq ?? ''} ${r.limit} ${r.withFacts ? 'f' : ''} ${r.scope.mailboxes?.join(',') ?? '*'}`;
