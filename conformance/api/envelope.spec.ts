import { expect, test } from '@playwright/test';
import { publishedContract } from '../support/contract.ts';
import { env, missing, readFeed } from '../support/deployment.ts';
import { seedOnce } from '../support/seed.ts';

test.describe('envelope', () => {
  test.beforeAll(seedOnce);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every feed check'));

  test("every event validates against the deployment's published schema", async ({ request }) => {
    const contract = await publishedContract(request);
    const validateEnvelope = contract.validator('EventEnvelope');
    const validateResponse = contract.validator('EventFeedResponse');
    const { events } = await readFeed(request, env.key!, 500, { max: 2000 });
    expect(events.length, 'the feed is empty: nothing to validate').toBeGreaterThan(0);
    const invalid = events.filter((e) => !validateEnvelope(e)).map((e) => `${(e as { id: string }).id}: ${JSON.stringify(validateEnvelope.errors?.[0])}`);
    expect(invalid.slice(0, 5)).toEqual([]);
    expect(validateResponse({ events: events.slice(0, 10), next_cursor: 'x' }), JSON.stringify(validateResponse.errors)).toBe(true);
  });

  test('ids, types, version, account and subject have their documented form', async ({ request }) => {
    const { events } = await readFeed(request, env.key!, 500, { max: 2000 });
    const accounts = new Set<string>();
    for (const e of events) {
      expect(e.id, 'id').toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(e.type, 'type').toMatch(/^mail\./);
      expect(e.v, 'v').toBe(1);
      expect(typeof e.account, 'account').toBe('string');
      expect(typeof e.subject?.person?.email, 'subject.person').toBe('string');
      expect(typeof e.subject?.refs, 'subject.refs').toBe('object');
      expect(e.occurred_at, 'occurred_at in UTC').toMatch(/Z$/);
      accounts.add(e.account);
    }
    expect([...accounts].length, 'one key reads one workspace: one account').toBeLessThanOrEqual(1);
  });
});
