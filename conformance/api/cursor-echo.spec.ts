import { expect, test } from '../support/test.ts';
import { WRITES } from '../support/writes.ts';
import { emit, env, feed, missing, readFeed, writesRefused } from '../support/deployment.ts';
import { seeded } from '../support/seed.ts';

test.describe('cursor echo', () => {
  test.beforeAll(seeded);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every feed check'));

  test('at the end of the feed next_cursor equals after, on repeated calls', async ({ request }) => {
    const head = await readFeed(request, env.key!, 500);
    test.skip(!head.complete, `the feed holds over ${env.maxEvents} events: head not reached`);
    for (let i = 0; i < 3; i++) {
      const page = await feed(request, env.key, { after: head.cursor });
      expect(page.status).toBe(200);
      expect(page.body.events).toEqual([]);
      expect(page.body.next_cursor, 'next_cursor must be byte-identical to after when nothing is new').toBe(head.cursor);
    }
  });

  test('events emitted after the end appear once, after the old ones', { tag: WRITES }, async ({ request }) => {
    const refused = writesRefused('emitting events');
    test.skip(refused !== undefined, refused);
    const head = await readFeed(request, env.key!, 500);
    test.skip(!head.complete, `the feed holds over ${env.maxEvents} events: head not reached`);
    const fresh = await emit(request, env.restrictedMailboxes[0]);
    const next = await readFeed(request, env.key!, 500, { after: head.cursor });
    expect(
      next.events.filter((e) => e.id === fresh.id),
      'the new event, once',
    ).toHaveLength(1);
    const oldIds = new Set(head.events.map((e) => e.id));
    expect(
      next.events.some((e) => oldIds.has(e.id)),
      'old events came back after the cursor',
    ).toBe(false);
    const whole = await readFeed(request, env.key!, 500);
    expect(whole.events.map((e) => e.id).indexOf(fresh.id), 'the new event comes after every old one').toBeGreaterThanOrEqual(
      head.events.length,
    );
  });

  test('without after the feed starts at the oldest event', async ({ request }) => {
    const first = await feed(request, env.key, { limit: 5 });
    const alsoFirst = await feed(request, env.key, {});
    expect(first.status).toBe(200);
    const stepwise = await readFeed(request, env.key!, 1, { max: 5 });
    expect(first.body.events.map((e: { id: string }) => e.id)).toEqual(stepwise.events.slice(0, 5).map((e) => e.id));
    expect(alsoFirst.body.events.slice(0, 5)).toEqual(first.body.events);
  });
});
