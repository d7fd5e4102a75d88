import type { StoredPage } from '../store/port.ts';

/**
 * Which events of a workspace's feed a reader is given: the whole feed, or only the events of
 * some mailboxes (events without a mailbox excluded), as its key says (Principal). The
 * feed reader (FeedReader) decides by it which shortcut may answer a read: only a page of the
 * whole feed shows for itself that it holds every event after its cursor (`readRightAfter`).
 */
export class FeedScope {
  static readonly WHOLE = new FeedScope(null);

  /** A key's mailboxes (null: every mailbox of the workspace). */
  static of(mailboxes: readonly string[] | null): FeedScope {
    return mailboxes === null ? FeedScope.WHOLE : new FeedScope(mailboxes);
  }

  /** null: the whole feed. */
  private constructor(readonly mailboxes: readonly string[] | null) {}

  get whole(): boolean {
    return this.mailboxes === null;
  }

  /** Whether an event of this mailbox (null: none) is in scope. */
  includes(mailboxId: string | null): boolean {
    return this.mailboxes === null || (mailboxId !== null && this.mailboxes.includes(mailboxId));
  }

  /**
   * Whether `page`, read in one snapshot after `afterSeq`, holds every event of the feed from
   * afterSeq + 1 on, with no hole before its end. Seqs have no holes (a per-workspace counter
   * hands them out in commit order), and a page's are distinct and above afterSeq, so a whole-feed
   * page whose last seq is afterSeq + count holds exactly afterSeq + 1 … afterSeq + count (an empty
   * one: nothing after afterSeq was there). A restricted page's seqs need not be consecutive: it
   * cannot tell.
   */
  readRightAfter(afterSeq: number, page: Pick<StoredPage, 'count' | 'lastSeq'>): boolean {
    return this.mailboxes === null && (page.lastSeq ?? afterSeq) === afterSeq + page.count;
  }
}
