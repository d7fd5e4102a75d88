import { expect, test } from '../support/test.ts';
import { publishedContract } from '../support/contract.ts';
import { env, feed, missing, readFeed, toAddEvents } from '../support/deployment.ts';
import { seeded } from '../support/seed.ts';

test.describe('envelope', () => {
  test.beforeAll(seeded);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every feed check'));

  test("every event validates against the deployment's published schema", async ({ request }) => {
    const contract = await publishedContract(request);
    const validateEnvelope = contract.validator('EventEnvelope');
    const { events } = await readFeed(request, env.key!, 500, { max: 2000 });
    test.skip(events.length === 0, `the feed is empty ${toAddEvents}: no envelope to validate`);
    const invalid = events
      .filter((e) => !validateEnvelope(e))
      .map((e) => `${(e as { id: string }).id}: ${JSON.stringify(validateEnvelope.errors?.[0])}`);
    expect(invalid.slice(0, 5)).toEqual([]);
  });

  test("every response validates against the deployment's published EventFeedResponse", async ({ request }) => {
    const contract = await publishedContract(request);
    const validateResponse = contract.validator('EventFeedResponse');
    // The responses themselves, not a rebuilt object: an extra member (has_more, total…) must fail.
    const check = (body: unknown, what: string) =>
      expect(validateResponse(body), `${what}: ${JSON.stringify(validateResponse.errors?.slice(0, 3))}`).toBe(true);
    let after: string | undefined;
    for (let read = 0, pages = 0; pages < 20; pages++) {
      const page = await feed(request, env.key, after === undefined ? { limit: 7 } : { after, limit: 500 });
      expect(page.status).toBe(200);
      expect(page.headers['content-type'] ?? '', 'content type').toMatch(/^application\/json/);
      check(page.body, `page ${pages + 1}`);
      read += page.body.events.length;
      after = page.body.next_cursor;
      if (page.body.events.length === 0 || read >= 2000) break;
    }
    // The empty page at the end of the feed too.
    const tail = await feed(request, env.key, { after, limit: 500 });
    check(tail.body, 'page after the end');
  });

  test('ids, types, version, account and subject have their documented form', async ({ request }) => {
    const { events } = await readFeed(request, env.key!, 500, { max: 2000 });
    test.skip(events.length === 0, `the feed is empty ${toAddEvents}: no envelope to check`);
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
