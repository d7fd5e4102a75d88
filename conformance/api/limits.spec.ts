import { expect, test } from '../support/test.ts';
import { env, eventsBytes, feed, missing, pageMaxBytes, readFeed, toAddEvents } from '../support/deployment.ts';
import { seeded } from '../support/seed.ts';

const expectInvalidArgument = (page: { status: number; body: any; text: string }, what: string) => {
  expect(page.status, `${what}: ${page.text.slice(0, 200)}`).toBe(400);
  expect(page.body?.error?.code, what).toBe('invalid_argument');
  expect(typeof page.body?.error?.message, what).toBe('string');
};

test.describe('limits', () => {
  test.beforeAll(seeded);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every feed check'));

  test('the default limit is 100', async ({ request }) => {
    const total = await readFeed(request, env.key!, 500, { max: 101 });
    test.skip(total.events.length <= 100, `the feed holds 100 events or fewer ${toAddEvents}`);
    const page = await feed(request, env.key, {});
    expect(page.status).toBe(200);
    expect(page.body.events).toHaveLength(100);
  });

  test('limits 1 and 500 are accepted', async ({ request }) => {
    // A page holds min(limit, events available), unless the next event would take it past the
    // documented byte cap: a server that caps 500 at 100 is not honouring it.
    const cap = await pageMaxBytes(request);
    const all = (await readFeed(request, env.key!, 50, { max: 500 })).events;
    const available = Math.min(500, all.length);
    for (const limit of [1, 500]) {
      const page = await feed(request, env.key, { limit });
      expect(page.status, `limit ${limit}`).toBe(200);
      const got = page.body.events.length;
      if (got < Math.min(limit, available)) {
        const next = all[got];
        const wouldBe = eventsBytes(page.body.events) + 1 + eventsBytes([next]);
        expect(
          got > 0 && wouldBe > cap,
          `limit ${limit} with ${available}+ events available: ${got} events, not stopped by the ${cap}-byte cap`,
        ).toBe(true);
      } else {
        expect(got, `limit ${limit} with ${available}+ events available`).toBe(Math.min(limit, available));
      }
    }
  });

  test('a page stays within the documented byte cap, or holds one event', async ({ request }) => {
    const cap = await pageMaxBytes(request);
    const page = await feed(request, env.key, { limit: 500 });
    expect(page.status).toBe(200);
    const bytes = eventsBytes(page.body.events);
    expect(
      bytes <= cap || page.body.events.length === 1,
      `a page of ${page.body.events.length} events holds ${bytes} bytes, over ${cap}`,
    ).toBe(true);
  });

  test('limits 0, 501, -1, 1.5, "10", null, true are refused with invalid_argument', async ({ request }) => {
    for (const limit of ['0', '501', '-1', '1.5', '"10"', 'null', 'true']) {
      expectInvalidArgument(await feed(request, env.key, `{"limit":${limit}}`), `limit ${limit}`);
    }
  });

  test('an unknown parameter is refused with invalid_argument', async ({ request }) => {
    for (const body of [{ foo: 1 }, { limit: 5, cursor: 'x' }, { after_id: 'evt_x' }]) {
      const page = await feed(request, env.key, body);
      expectInvalidArgument(page, JSON.stringify(body));
    }
  });

  test('a body that is not a JSON object is refused with invalid_argument', async ({ request }) => {
    for (const body of ['[]', '"limit"', '42', 'null', '{"limit":', 'limit=5']) {
      expectInvalidArgument(await feed(request, env.key, body), body);
    }
  });
});
