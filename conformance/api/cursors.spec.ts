import { expect, test } from '../support/test.ts';
import { env, feed, missing, otherWorkspaceMissing } from '../support/deployment.ts';
import { seeded } from '../support/seed.ts';

async function aCursor(request: Parameters<typeof feed>[0], key: string): Promise<string> {
  const page = await feed(request, key, { limit: 1 });
  expect(page.status).toBe(200);
  return page.body.next_cursor;
}

const expectRefused = (page: { status: number; body: any; text: string }, what: string) => {
  expect(page.status, `${what}: ${page.text.slice(0, 200)}`).toBe(400);
  expect(page.body?.error?.code, what).toBe('invalid_argument');
};

test.describe('cursors', () => {
  test.beforeAll(seeded);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every feed check'));

  test('a tampered cursor is refused with invalid_argument', async ({ request }) => {
    const cursor = await aCursor(request, env.key!);
    for (const i of [0, Math.floor(cursor.length / 2), cursor.length - 1]) {
      const swapped = cursor[i] === 'A' ? 'B' : 'A';
      expectRefused(await feed(request, env.key, { after: cursor.slice(0, i) + swapped + cursor.slice(i + 1) }), `changed at ${i}`);
    }
    expectRefused(await feed(request, env.key, { after: 'garbage' }), 'garbage');
  });

  test('a truncated cursor is refused with invalid_argument', async ({ request }) => {
    const cursor = await aCursor(request, env.key!);
    for (const length of [1, Math.floor(cursor.length / 2), cursor.length - 1]) {
      expectRefused(await feed(request, env.key, { after: cursor.slice(0, length) }), `first ${length} characters`);
    }
  });

  test('a cursor from another workspace is refused with invalid_argument', async ({ request }) => {
    test.skip(!env.otherKey, otherWorkspaceMissing('the cross-workspace cursor check'));
    const theirs = await aCursor(request, env.otherKey!);
    expectRefused(await feed(request, env.key, { after: theirs }), "another workspace's cursor");
  });
});
