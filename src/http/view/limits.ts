// The view's sizes and times, shared by the modules that read, show and follow the feed.

/** Events per list_events page (the newest, then older on demand). */
export const PAGE_LIMIT = 50;
/** list_events page size while looking for the oldest shown event again (after the tail trimmed). */
export const ANCHOR_PAGE_LIMIT = 100;
/** The most events on screen at once: about ten elements each. */
export const MAX_ROWS = 300;
/** Events per event_feed read (the live tail, and the walk to the head). */
export const TAIL_LIMIT = 500;
/** Seconds a tail read asks the service to hold it (Prefer: wait=N; the service caps it at 60). */
export const LONG_POLL_SECONDS = 25;
/** Without long-poll (no Preference-Applied in the answer: an older service), the pause between reads. */
export const FALLBACK_POLL_MS = 500;
export const MAX_BACKOFF_MS = 30000;
export const REQUEST_TIMEOUT_MS = 15000;
/** A deployment without feed_cursor: at most this many event_feed pages of 500 read to find the head. */
export const WALK_MAX_PAGES = 200;
/** New events are announced to screen readers at most this often, as one count. */
export const ANNOUNCE_EVERY_MS = 5000;
/** Rate-limited reads are retried after Retry-After, this many times. */
export const MAX_RATE_RETRIES = 5;
/** Ids recently shown, so that an event the feed returns again is not shown twice. */
export const SEEN_IDS = 5000;
export const MAX_MAILBOXES = 100;
