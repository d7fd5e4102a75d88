import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { APIRequestContext, APIResponse } from '@playwright/test';
import { pacedContext, RateLimitBudgetSpent, retryAfterSeconds } from '../conformance/support/rate-limits.ts';

// The kit's pacing (conformance/support/rate-limits.ts) against a scripted deployment, without Playwright.

const answer = (status: number, headers: Record<string, string> = {}) =>
  ({ status: () => status, headers: () => headers, dispose: async () => {} }) as unknown as APIResponse;

/** A request context whose answers are scripted, recording when each request was sent. */
function scripted(answers: APIResponse[]) {
  const sentAt: number[] = [];
  const context = { post: async () => (sentAt.push(Date.now()), answers.shift() ?? answer(200)) } as unknown as APIRequestContext;
  return { context, sentAt };
}

describe('the kit honours rate limits', () => {
  it('reads Retry-After in seconds or as an HTTP date, else RateLimit-Reset, else 1 s', () => {
    assert.equal(retryAfterSeconds({ 'retry-after': '3' }), 3);
    assert.equal(retryAfterSeconds({ 'retry-after': new Date(10_000).toUTCString() }, 4_000), 6);
    assert.equal(retryAfterSeconds({ 'ratelimit-reset': '2' }), 2);
    assert.equal(retryAfterSeconds({}), 1);
  });

  it('waits out a 429 as long as Retry-After says, sends again, and counts the wait in the run ledger', async () => {
    process.env.EVENT_FEED_WAIT_LEDGER = join(mkdtempSync(join(tmpdir(), 'kit-ledger-')), 'waits');
    process.env.EVENT_FEED_MAX_WAIT_SECONDS = '5';
    const { context, sentAt } = scripted([answer(429, { 'retry-after': '1' }), answer(200)]);
    const response = await pacedContext(context).post('/v1/event_feed', { headers: { authorization: 'Bearer k1' } });
    assert.equal(response.status(), 200);
    assert.equal(sentAt.length, 2);
    assert.ok(sentAt[1]! - sentAt[0]! >= 990, `sent again after ${sentAt[1]! - sentAt[0]!} ms`);
    assert.ok(Number(readFileSync(process.env.EVENT_FEED_WAIT_LEDGER, 'utf8')) >= 1000);
  });

  it('paces a key whose bucket the last answer left empty, before it is refused', async () => {
    process.env.EVENT_FEED_WAIT_LEDGER = join(mkdtempSync(join(tmpdir(), 'kit-ledger-')), 'waits');
    const empty = { 'ratelimit-limit': '10', 'ratelimit-remaining': '0', 'ratelimit-reset': '3' };
    const { context, sentAt } = scripted([answer(200, empty), answer(200)]);
    const paced = pacedContext(context);
    await paced.post('/v1/event_feed', { headers: { authorization: 'Bearer k2' } });
    await paced.post('/v1/event_feed', { headers: { authorization: 'Bearer k2' } });
    // One token of a bucket of 10 that refills in 3 s: about 300 ms.
    assert.ok(sentAt[1]! - sentAt[0]! >= 250, `second request after ${sentAt[1]! - sentAt[0]!} ms`);
  });

  it('past the bound, gives up with the reason instead of waiting or failing', async () => {
    process.env.EVENT_FEED_WAIT_LEDGER = join(mkdtempSync(join(tmpdir(), 'kit-ledger-')), 'waits');
    process.env.EVENT_FEED_MAX_WAIT_SECONDS = '2';
    const { context, sentAt } = scripted([answer(429, { 'retry-after': '30' })]);
    const started = Date.now();
    await assert.rejects(pacedContext(context).post('/v1/event_feed', { headers: { authorization: 'Bearer k3' } }), (error: Error) => {
      assert.ok(error instanceof RateLimitBudgetSpent);
      assert.match(error.message, /429, Retry-After 30 s.*EVENT_FEED_MAX_WAIT_SECONDS=2; check not run/);
      return true;
    });
    assert.equal(sentAt.length, 1);
    assert.ok(Date.now() - started < 1000, 'it did not wait');
  });
});
