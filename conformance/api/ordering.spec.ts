import { expect, test } from '../support/test.ts';
import { WRITES } from '../support/writes.ts';
import { emit, env, missing, readFeed, toAddEvents, writesRefused } from '../support/deployment.ts';
import { seeded } from '../support/seed.ts';

test.describe('ordering', () => {
  test.beforeAll(seeded);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every feed check'));

  test('ids are unique across the feed', async ({ request }) => {
    const { events } = await readFeed(request, env.key!, 500);
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size, 'duplicate event ids in the feed').toBe(ids.length);
  });

  test('pages read with limits 1, 7, 100 and 500 concatenate to the same sequence', async ({ request }) => {
    // Limit 1 costs one request per event: compare the first 300 events of each reading.
    const window = 300;
    const readings = new Map<number, string[]>();
    for (const limit of [500, 100, 7, 1]) {
      const read = await readFeed(request, env.key!, limit, { max: window });
      readings.set(
        limit,
        read.events.slice(0, window).map((e) => e.id),
      );
    }
    const reference = readings.get(500)!;
    test.skip(reference.length < 2, `the feed holds fewer than 2 events ${toAddEvents}: no order to compare`);
    for (const limit of [100, 7, 1]) {
      expect(readings.get(limit), `pages of ${limit} differ from pages of 500`).toEqual(reference);
    }
  });

  test('events emitted one after another come back in that order', { tag: WRITES }, async ({ request }) => {
    const refused = writesRefused('emitting events');
    test.skip(refused !== undefined, refused);
    const head = await readFeed(request, env.key!, 500);
    test.skip(!head.complete, `the feed holds over ${env.maxEvents} events (EVENT_FEED_MAX_EVENTS): head not reached`);
    const emitted: string[] = [];
    for (let i = 0; i < 5; i++) emitted.push((await emit(request, env.restrictedMailboxes[0])).id);
    const after = await readFeed(request, env.key!, 2, { after: head.cursor });
    // Other writers may interleave on a live deployment: our five must appear once each, in order.
    const ours = after.events.map((e) => e.id).filter((id) => emitted.includes(id));
    expect(ours).toEqual(emitted);
  });
});
