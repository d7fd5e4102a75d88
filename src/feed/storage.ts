import type { Db } from '../store/db.ts';
import { readPage, type PageQuery, type StoredPage } from '../store/feed-page.ts';
import { prunedThrough, prunedThroughMailboxes } from '../store/retention.ts';

/** The retention watermarks the expiry check reads (feed/expiry.ts). */
export interface FeedWatermarks {
  /** The highest seq pruned from the workspace's feed (0 when nothing was): every seq up to it is gone. */
  prunedThrough(workspaceId: string): Promise<number>;
  /** The highest seq pruned among these mailboxes' events: what a restricted key may have missed. */
  prunedThroughMailboxes(workspaceId: string, mailboxes: readonly string[]): Promise<number>;
}

/** All the feed reader (feed/reader.ts) reads from storage. */
export interface FeedStorage extends FeedWatermarks {
  /** One page by keyset after `q.afterSeq` (store/feed-page.ts; outside a transaction, possibly read ahead). */
  readPage(q: PageQuery): Promise<StoredPage>;
}

/** The feed's storage on one database handle. */
export function feedStorageOn(db: Db): FeedStorage {
  return {
    readPage: (q) => readPage(db, q),
    prunedThrough: (workspaceId) => prunedThrough(db, workspaceId),
    prunedThroughMailboxes: (workspaceId, mailboxes) => prunedThroughMailboxes(db, workspaceId, mailboxes),
  };
}
