import { expect, test } from '@playwright/test';
import { env, feed, missing, readFeed } from '../support/deployment.ts';
import { seedOnce } from '../support/seed.ts';

test.describe('no side effects', () => {
  test.beforeAll(seedOnce);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every feed check'));

  test('reading twice gives identical results', async ({ request }) => {
    const first = await feed(request, env.key, { limit: 50 });
    const second = await feed(request, env.key, { limit: 50 });
    expect(second.body).toEqual(first.body);
    const next1 = await feed(request, env.key, { after: first.body.next_cursor, limit: 50 });
    const next2 = await feed(request, env.key, { after: first.body.next_cursor, limit: 50 });
    expect(next2.body).toEqual(next1.body);
  });

  test('reading adds no event', async ({ request }) => {
    const head = await readFeed(request, env.key!, 500);
    test.skip(!head.complete, `the feed holds over ${env.maxEvents} events: head not reached`);
    for (let i = 0; i < 5; i++) await feed(request, env.key, { limit: 10 });
    const again = await readFeed(request, env.key!, 500);
    // A live deployment may receive events meanwhile, but never events caused by reading: the
    // kit's reads leave the feed exactly as it was when nobody else writes.
    expect(again.events.slice(0, head.events.length)).toEqual(head.events);
    expect(again.events.filter((e) => e.type.startsWith('feed.') || e.type.includes('read'))).toEqual([]);
  });
});
