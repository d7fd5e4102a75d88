import { setTimeout as sleep } from 'node:timers/promises';
import { pacedFetch, retryAfterSeconds } from './rate-limits.ts';
import { readLedger, updateLedger, type MadeKey } from './made-keys.ts';

/**
 * Given EVENT_FEED_ADMIN_KEY, the kit makes the keys it was not given through `create_key` before the
 * checks start (global setup) and revokes every one of them when the run ends (global teardown),
 * whether checks failed or the run was interrupted. What an admin key of one workspace can honestly
 * provide: keys of that workspace (read, restricted to some of its mailboxes, without read, one
 * revoked at once, and a write key when writes are allowed). Not a key of another workspace:
 * create_key makes keys of the caller's own workspace only, so the checks of isolation between
 * workspaces still need EVENT_FEED_OTHER_KEY and are skipped, saying so, without it.
 */

/** The kit's own mailbox, restricted to when the feed has no two mailboxes to split (seeding fills it when writes are allowed). */
export const KIT_RESTRICTED_MAILBOX = 'mbx_conformance_scoped';
/** How much of the feed the kit reads to pick the restricted key's mailboxes. */
const MAILBOX_SAMPLE_EVENTS = 2000;
/** A restricted key's mailboxes: enough to see a merge of several, far under the contract's 100. */
const MAX_RESTRICTED_MAILBOXES = 10;

type Permission = 'read' | 'write' | 'admin';

class AdminKeyRefused extends Error {}

let provisioning: Promise<void> | undefined;

/**
 * The mailboxes to restrict a key to, from events of the feed: about half of the mailboxes seen, the
 * busiest first, so that events are both inside and outside them. Undefined when the events do not
 * allow that (no mailbox at all, or one mailbox holding every event).
 */
export function chooseRestrictedMailboxes(events: Array<{ subject?: { refs?: { mailbox_id?: string } } }>): string[] | undefined {
  const counts = new Map<string, number>();
  let withoutMailbox = 0;
  for (const event of events) {
    const mailbox = event.subject?.refs?.mailbox_id;
    if (mailbox === undefined) withoutMailbox++;
    else counts.set(mailbox, (counts.get(mailbox) ?? 0) + 1);
  }
  const busiest = [...counts].sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).map(([mailbox]) => mailbox);
  if (busiest.length === 0 || (busiest.length === 1 && withoutMailbox === 0)) return undefined;
  const half = Math.min(MAX_RESTRICTED_MAILBOXES, Math.max(1, Math.floor(busiest.length / 2)));
  return busiest.slice(0, half).sort();
}

async function post(path: string, key: string, body: unknown): Promise<{ status: number; json: any; text: string }> {
  const response = await pacedFetch(`Bearer ${key}`, () =>
    fetch(new URL(path, baseUrl()), {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    }),
  );
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

const baseUrl = () => process.env.EVENT_FEED_BASE_URL ?? '';
const runLabel = new Date().toISOString();
const labelOf = (role: string) => `event-feed-conformance: ${role} (temporary, revoked when the run of ${runLabel} ends)`;

/** Makes one key and writes it in the ledger before anything else; a key made once the teardown began is revoked at once. */
async function makeKey(
  admin: string,
  role: string,
  permissions: Permission[],
  mailboxes?: string[],
): Promise<{ status: number; key?: string; made?: MadeKey; text: string }> {
  const label = labelOf(role);
  const answer = await post('/v1/create_key', admin, { permissions, ...(mailboxes ? { mailboxes } : {}), label });
  if (answer.status === 401) throw new AdminKeyRefused(`EVENT_FEED_ADMIN_KEY was refused (401): ${answer.text.slice(0, 200)}`);
  if (answer.status !== 200 && answer.status !== 201) return { status: answer.status, text: answer.text };
  const made: MadeKey = { id: answer.json.api_key.id, role, label, revoked: false };
  const ledger = updateLedger((l) => void l.made.push(made));
  if (ledger.closing) {
    await revokeOne(admin, made);
    throw new AdminKeyRefused('the run was stopped while the kit was making its keys');
  }
  return { status: answer.status, key: answer.json.key, made, text: answer.text };
}

async function mustMake(
  admin: string,
  role: string,
  permissions: Permission[],
  mailboxes?: string[],
): Promise<{ key: string; made: MadeKey }> {
  const answer = await makeKey(admin, role, permissions, mailboxes);
  if (!answer.key || !answer.made) {
    throw new AdminKeyRefused(
      `create_key refused the ${role} key (${answer.status}): ${answer.text.slice(0, 200)}. EVENT_FEED_ADMIN_KEY must be an admin key with read, ` +
        'not restricted to mailboxes (a key never makes keys with more rights than its own)',
    );
  }
  return { key: answer.key, made: answer.made };
}

/** Events of the feed (up to MAILBOX_SAMPLE_EVENTS), to pick mailboxes from. */
async function sampleFeed(key: string): Promise<Array<{ subject?: { refs?: { mailbox_id?: string } } }>> {
  const events = [];
  let after: string | undefined;
  while (events.length < MAILBOX_SAMPLE_EVENTS) {
    const page = await post('/v1/event_feed', key, after === undefined ? { limit: 500 } : { after, limit: 500 });
    if (page.status !== 200)
      throw new AdminKeyRefused(`event_feed answered ${page.status} to the kit's read key: ${page.text.slice(0, 200)}`);
    events.push(...page.json.events);
    if (page.json.events.length === 0) break;
    after = page.json.next_cursor;
  }
  return events;
}

/** Global setup: the keys the run lacks, made with the admin key and put in the environment the checks read (the kit's `env`). */
export function provisionKeys(): Promise<void> {
  provisioning ??= provision();
  return provisioning;
}

async function provision(): Promise<void> {
  const admin = process.env.EVENT_FEED_ADMIN_KEY;
  if (!admin) return;
  const env = process.env;
  const writes = ['1', 'true', 'yes'].includes((env.EVENT_FEED_ALLOW_WRITES ?? '').toLowerCase());
  const notMade: string[] = [];
  try {
    env.EVENT_FEED_KEY ||= (await mustMake(admin, 'read', ['read'])).key;
    if (!env.EVENT_FEED_RESTRICTED_KEY) {
      const given = (env.EVENT_FEED_RESTRICTED_MAILBOXES ?? '')
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean);
      const mailboxes = given.length
        ? given
        : (chooseRestrictedMailboxes(await sampleFeed(env.EVENT_FEED_KEY)) ?? [KIT_RESTRICTED_MAILBOX]);
      env.EVENT_FEED_RESTRICTED_KEY = (await mustMake(admin, `read, restricted to ${mailboxes.join(', ')}`, ['read'], mailboxes)).key;
      env.EVENT_FEED_RESTRICTED_MAILBOXES = mailboxes.join(',');
      updateLedger((l) => void (l.restrictedMailboxes = mailboxes));
    }
    if (!env.EVENT_FEED_NOREAD_KEY) {
      // Without read: write, or admin alone when the admin key cannot give write.
      const write = await makeKey(admin, 'without read (write)', ['write']);
      env.EVENT_FEED_NOREAD_KEY = write.key ?? (await mustMake(admin, 'without read (admin)', ['admin'])).key;
    }
    if (!env.EVENT_FEED_REVOKED_KEY) {
      const revoked = await mustMake(admin, 'revoked at once', ['read']);
      await revokeOne(admin, revoked.made);
      const entry = readLedger().made.find((m) => m.id === revoked.made.id);
      if (!entry?.revoked) throw new AdminKeyRefused(`revoke_key did not revoke ${revoked.made.id}: ${entry?.error ?? 'no answer'}`);
      env.EVENT_FEED_REVOKED_KEY = revoked.key;
    }
    if (writes && !env.EVENT_FEED_WRITE_KEY) env.EVENT_FEED_WRITE_KEY = (await mustMake(admin, 'read and write', ['read', 'write'])).key;
    if (!env.EVENT_FEED_OTHER_KEY) {
      notMade.push(
        "a read key of another workspace: create_key makes keys of the admin key's own workspace only, so isolation between workspaces " +
          'was not checked (give EVENT_FEED_OTHER_KEY, a read key of another workspace, to check it)',
      );
    }
  } finally {
    updateLedger((l) => void l.notMade.push(...notMade));
  }
}

/** Revokes one made key, waiting out the deployment's rate limit (past the run's wait bound too: a key must not stay behind). */
async function revokeOne(admin: string, made: MadeKey): Promise<void> {
  let error = 'not tried';
  for (let attempt = 0; attempt < 6; attempt++) {
    try {
      const response = await fetch(new URL('/v1/revoke_key', baseUrl()), {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id: made.id }),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      if (response.status === 200) {
        updateLedger((l) => {
          const entry = l.made.find((m) => m.id === made.id);
          if (entry) Object.assign(entry, { revoked: true, error: undefined });
        });
        return;
      }
      error = `revoke_key answered ${response.status}: ${text.slice(0, 200)}`;
      if (response.status !== 429 && response.status < 500) break;
      await sleep(Math.min(30, retryAfterSeconds(Object.fromEntries(response.headers))) * 1000);
    } catch (cause) {
      error = `revoke_key failed: ${(cause as Error).message}`;
      await sleep(1000);
    }
  }
  updateLedger((l) => {
    const entry = l.made.find((m) => m.id === made.id);
    if (entry) entry.error = error;
  });
}

/** Global teardown: every key the kit made is revoked, after any key still being made. */
export async function revokeMadeKeys(): Promise<void> {
  const admin = process.env.EVENT_FEED_ADMIN_KEY;
  if (!admin) return;
  updateLedger((l) => void (l.closing = true));
  // A setup interrupted mid-request: its key is in the ledger once the answer comes (or revoked by makeKey).
  await Promise.race([provisioning?.catch(() => undefined), sleep(35_000)]);
  for (const made of readLedger().made.filter((m) => !m.revoked)) await revokeOne(admin, made);
}
