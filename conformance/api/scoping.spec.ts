import { expect, test } from '../support/test.ts';
import { env, missing, otherWorkspaceMissing, readFeed, toAddEvents } from '../support/deployment.ts';
import { seeded } from '../support/seed.ts';

test.describe('scoping', () => {
  test.beforeAll(seeded);
  test.skip(!env.key, missing('EVENT_FEED_KEY', 'every feed check'));

  test('the restricted key sees the full feed filtered to its mailboxes', async ({ request }) => {
    test.skip(
      !env.restrictedKey || env.restrictedMailboxes.length === 0,
      missing('EVENT_FEED_RESTRICTED_KEY / EVENT_FEED_RESTRICTED_MAILBOXES', 'scoping checks'),
    );
    const full = await readFeed(request, env.key!, 500);
    const allowed = new Set(env.restrictedMailboxes);
    const expected = full.events
      .filter((e) => e.subject?.refs?.mailbox_id !== undefined && allowed.has(e.subject.refs.mailbox_id))
      .map((e) => e.id);
    test.skip(
      expected.length === 0 || expected.length === full.events.length,
      `the feed needs events both inside and outside the restricted mailboxes ${toAddEvents}`,
    );
    for (const limit of [500, 7]) {
      const restricted = await readFeed(request, env.restrictedKey!, limit);
      const seen = restricted.events.map((e) => e.id);
      // Events written after the full read may follow; everything the full read had must match exactly.
      expect(seen.slice(0, expected.length), `restricted feed (pages of ${limit})`).toEqual(expected);
      const fullIds = new Set(full.events.map((e) => e.id));
      expect(
        seen.slice(expected.length).filter((id) => fullIds.has(id)),
        'events the full feed had but in another order',
      ).toEqual([]);
    }
  });

  test('the restricted key never sees an event of another mailbox', async ({ request }) => {
    test.skip(
      !env.restrictedKey || env.restrictedMailboxes.length === 0,
      missing('EVENT_FEED_RESTRICTED_KEY / EVENT_FEED_RESTRICTED_MAILBOXES', 'scoping checks'),
    );
    const full = await readFeed(request, env.key!, 500);
    test.skip(
      full.events.every((e) => env.restrictedMailboxes.includes(e.subject?.refs?.mailbox_id ?? '')),
      `the feed holds no event outside the restricted mailboxes ${toAddEvents}: nothing to hide`,
    );
    const restricted = await readFeed(request, env.restrictedKey!, 100);
    const outside = restricted.events.filter((e) => !env.restrictedMailboxes.includes(e.subject?.refs?.mailbox_id ?? ''));
    expect(outside.map((e) => `${e.id} (${e.subject?.refs?.mailbox_id ?? 'no mailbox'})`)).toEqual([]);
  });

  test("another workspace's key never sees this workspace's events", async ({ request }) => {
    test.skip(!env.otherKey, otherWorkspaceMissing('the cross-workspace check'));
    const mine = await readFeed(request, env.key!, 500);
    test.skip(mine.events.length === 0, `the feed is empty ${toAddEvents}: nothing to hide`);
    const theirs = await readFeed(request, env.otherKey!, 500);
    const myIds = new Set(mine.events.map((e) => e.id));
    const myAccounts = new Set(mine.events.map((e) => e.account));
    expect(theirs.events.filter((e) => myIds.has(e.id) || myAccounts.has(e.account)).map((e) => e.id)).toEqual([]);
  });
});
