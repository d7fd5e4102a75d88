import type { Reservation } from '../limits/memory-budget.ts';

/**
 * What a read of the feed spends, asked for by the read itself at the moment it knows it: the one
 * port between the feed and whoever pays for its reads (the call that reads: Call). A read answered
 * "nothing new" from what this process knows spends nothing; one that reads a page admits its
 * memory first; one shared with other calls (SharedReads) admits a page once for all of them, and
 * each call answering from it keeps a share until its own answer is written.
 */
export interface ReadBudget {
  /** This call's page memory (its worst case), before the page is read: waits its turn, or refuses rate_limited. */
  admitPage(): Promise<void>;
  /** A page's worst case for a read shared with other calls, admitted for the read; `woken`: a held read woken with others (it may wait longer). */
  admitShared(woken: boolean): Promise<Reservation>;
  /** Holds a share of a shared read's reservation until this call's answer is written (`release`, called once, lets go of it). */
  keepShare(release: () => void): void;
}
