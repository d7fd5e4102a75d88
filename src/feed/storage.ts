import type { FeedStore } from '../store/port.ts';

/** The retention watermarks the expiry check reads (assertCursorNotExpired). */
export type FeedWatermarks = Pick<FeedStore, 'prunedThrough' | 'prunedThroughMailboxes'>;

/** All the feed reader (FeedReader) reads from storage: the Store gives it. */
export type FeedStorage = FeedWatermarks & Pick<FeedStore, 'readPage' | 'feedHead'>;
