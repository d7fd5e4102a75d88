import { request as playwrightRequest } from '@playwright/test';
import { test } from './test.ts';
import { emit, env, MARKER, readFeed, writesRefused } from './deployment.ts';
import { pacedContext, RateLimitBudgetSpent } from './rate-limits.ts';

let seeding: Promise<string | undefined> | undefined;

/**
 * When the kit may write (a write key and EVENT_FEED_ALLOW_WRITES), makes sure the feed holds
 * enough events of every kind the checks need: over 100 in all (to see the default limit), some
 * in the restricted mailboxes, some in another mailbox and some without a mailbox. Otherwise the
 * checks use what is there. Resolves to why seeding could not finish (a spent rate-limit wait).
 */
export function seedOnce(): Promise<string | undefined> {
  seeding ??= (async () => {
    if (writesRefused('seeding') || !env.key) return undefined;
    const request = pacedContext(await playwrightRequest.newContext({ baseURL: env.baseUrl }));
    try {
      const current = await readFeed(request, env.key, 500, { max: 200 });
      const wanted = Math.max(12, 130 - current.events.length);
      const mailboxes = [...env.restrictedMailboxes, MARKER.otherMailbox, undefined];
      for (let i = 0; i < wanted; i++) await emit(request, mailboxes[i % mailboxes.length]);
      return undefined;
    } catch (error) {
      if (error instanceof RateLimitBudgetSpent) return `seeding the feed: ${error.message}`;
      throw error;
    } finally {
      await request.dispose();
    }
  })();
  return seeding;
}

/** A beforeAll hook: seeds once, and skips the group (with the reason) when seeding could not finish. */
export async function seeded(): Promise<void> {
  const notRun = await seedOnce();
  test.skip(notRun !== undefined, notRun);
}
