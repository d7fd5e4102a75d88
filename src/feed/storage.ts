import type { FeedStore } from '../store/port.ts';

/** The retention watermarks the expiry check reads (feed/expiry.ts). */
export type FeedWatermarks = Pick<FeedStore, 'prunedThrough' | 'prunedThroughMailboxes'>;

/** All the feed reader (feed/reader.ts) reads from storage: the Store gives it. */
export type FeedStorage = FeedWatermarks & Pick<FeedStore, 'readPage' | 'feedHead'>;
