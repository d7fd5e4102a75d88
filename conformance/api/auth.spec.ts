import { expect, test } from '../support/test.ts';
import { env, feed, missing } from '../support/deployment.ts';

function expectError(page: { status: number; body: any; headers: Record<string, string> }, status: number, code: string) {
  expect(page.status).toBe(status);
  expect(page.body, 'error body shape').toEqual({ error: { code, message: expect.any(String) } });
}

test.describe('auth', () => {
  test('no key is refused with 401 unauthorized', async ({ request }) => {
    const page = await feed(request, undefined, {});
    expectError(page, 401, 'unauthorized');
    expect(page.headers['www-authenticate'] ?? '').toMatch(/^Bearer/i);
  });

  test('a garbage key is refused with 401 unauthorized', async ({ request }) => {
    for (const key of ['garbage', 'efk_00000000000000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
      expectError(await feed(request, key, {}), 401, 'unauthorized');
    }
  });

  test('a revoked key is refused with 401 unauthorized', async ({ request }) => {
    test.skip(!env.revokedKey, missing('EVENT_FEED_REVOKED_KEY', 'the revoked-key check'));
    expectError(await feed(request, env.revokedKey, {}), 401, 'unauthorized');
  });

  test('a key without read is refused with 403 forbidden', async ({ request }) => {
    test.skip(!env.noReadKey, missing('EVENT_FEED_NOREAD_KEY', 'the permission check'));
    expectError(await feed(request, env.noReadKey, {}), 403, 'forbidden');
  });
});
