/**
 * Emitting is an explicit opt-in (EVENT_FEED_ALLOW_WRITES, --allow-writes): events can't be deleted,
 * and the workspace's real webhooks deliver them. The checks that emit carry this tag; a read-only
 * run leaves them out (grepInvert in the Playwright config) and says so in its report.
 */
export const WRITES_TAG = /@writes/;
export const WRITES = '@writes';

export const writesAllowed = (): boolean => ['1', 'true', 'yes'].includes((process.env.EVENT_FEED_ALLOW_WRITES ?? '').toLowerCase());
