/**
 * `serve --seed-demo` (what `npm start` runs): prints ready-to-paste read, write and admin keys at
 * the first start, and the same keys again at every later start of that demo database; each key
 * works with its permission. Its keys are kept beside the database, readable by the owner only.
 * It also prints the conformance kit's variables and command, each key doing what the kit takes it
 * for (test/demo-kit.test.ts runs that command); a demo database from before gets them at its next start.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { demoKeysPath } from '../src/demo/demo-keys-file.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase, type TestDatabase } from './support/databases.ts';
import { startProcessServer, type ProcessServer } from './support/process-server.ts';
import { until } from './support/wait.ts';

const EXPORT = /^ {2}export (READ_KEY|WRITE_KEY|ADMIN_KEY)=(efk_\S+)$/gm;
const KIT_EXPORT = /^ {2}export (EVENT_FEED_\w+)=(\S+)$/gm;

async function startDemo(
  url: string,
): Promise<{ server: ProcessServer; keys: Record<string, string>; kit: Record<string, string>; output: string }> {
  const server = await startProcessServer({ databaseUrl: url, serveArgs: ['--seed-demo'] });
  await until('the demo banner', () => server.output().includes('API reference:'), 10_000);
  const output = server.output();
  const keys = Object.fromEntries([...output.matchAll(EXPORT)].map((m) => [m[1]!, m[2]!]));
  const kit = Object.fromEntries([...output.matchAll(KIT_EXPORT)].map((m) => [m[1]!, m[2]!]));
  return { server, keys, kit, output };
}

async function post(server: ProcessServer, path: string, body: unknown, key: string) {
  const response = await fetch(server.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as any };
}

/** Each key does what its name says, and no more. */
async function assertKeysWork(server: ProcessServer, keys: Record<string, string>): Promise<void> {
  const read = await post(server, '/v1/event_feed', { limit: 5 }, keys.READ_KEY!);
  assert.equal(read.status, 200);
  assert.equal(read.json.events.length, 5, 'the demo events are there');
  assert.equal((await post(server, '/v1/emit_event', sampleEvent('mbx_sales', 1), keys.READ_KEY!)).status, 403, 'READ_KEY only reads');
  assert.equal((await post(server, '/v1/emit_event', sampleEvent('mbx_sales', 2), keys.WRITE_KEY!)).status, 201);
  assert.equal((await post(server, '/v1/list_keys', {}, keys.WRITE_KEY!)).status, 403, 'WRITE_KEY is no admin');
  const listed = await post(server, '/v1/list_keys', {}, keys.ADMIN_KEY!);
  assert.equal(listed.status, 200);
  assert.deepEqual(
    listed.json.keys
      .map((k: any) => k.label)
      .filter((l: string) => !l.includes('conformance kit'))
      .sort(),
    ['demo admin', 'demo read', 'demo write'],
  );
}

/** The kit's variables but its base URL (each start of a test server has a port of its own). */
const keysOf = ({ EVENT_FEED_BASE_URL: _url, ...keys }: Record<string, string>) => keys;

/** The kit's variables, then its command, right after them; each key does what the kit takes it for. */
async function assertKitWorks(server: ProcessServer, output: string, kit: Record<string, string>, readKey: string): Promise<void> {
  assert.deepEqual(
    Object.keys(kit),
    [
      'EVENT_FEED_BASE_URL',
      'EVENT_FEED_KEY',
      'EVENT_FEED_RESTRICTED_KEY',
      'EVENT_FEED_RESTRICTED_MAILBOXES',
      'EVENT_FEED_NOREAD_KEY',
      'EVENT_FEED_OTHER_KEY',
      'EVENT_FEED_REVOKED_KEY',
    ],
    output,
  );
  assert.match(
    output,
    /^ {2}export EVENT_FEED_REVOKED_KEY=\S+\n {2}cd \S+ && npx event-feed conformance\n/m,
    'the command follows the exports it needs',
  );
  assert.equal(kit.EVENT_FEED_BASE_URL, server.url);
  assert.equal(kit.EVENT_FEED_KEY, readKey);
  const all = (await post(server, '/v1/event_feed', { limit: 500 }, readKey)).json.events;
  const mailboxes = kit.EVENT_FEED_RESTRICTED_MAILBOXES!.split(',');
  const restricted = await post(server, '/v1/event_feed', { limit: 500 }, kit.EVENT_FEED_RESTRICTED_KEY!);
  assert.equal(restricted.status, 200);
  const inside = all.filter((e: any) => mailboxes.includes(e.subject.refs.mailbox_id)).map((e: any) => e.id);
  assert.ok(inside.length > 1 && inside.length < all.length, 'the demo has events inside and outside the restricted mailboxes');
  assert.deepEqual(
    restricted.json.events.map((e: any) => e.id),
    inside,
  );
  assert.equal(
    (await post(server, '/v1/event_feed', {}, kit.EVENT_FEED_NOREAD_KEY!)).status,
    403,
    'the no-read key is valid, without read',
  );
  assert.equal((await post(server, '/v1/event_feed', {}, kit.EVENT_FEED_REVOKED_KEY!)).status, 401, 'the revoked key is refused');
  const other = await post(server, '/v1/event_feed', { limit: 500 }, kit.EVENT_FEED_OTHER_KEY!);
  assert.equal(other.status, 200);
  assert.ok(other.json.events.length > 0, 'the second workspace has events of its own');
  assert.ok(
    other.json.events.every((e: any) => e.account !== all[0].account),
    'of another workspace',
  );
}

describe('serve --seed-demo prints working keys at every start', () => {
  let database: TestDatabase;
  let running: ProcessServer | undefined;

  before(async () => {
    database = await sqliteDatabase();
  });
  after(async () => {
    await running?.stop();
    await database?.drop();
  });

  it('first start: seeds, prints read, write and admin keys as export lines, keeps them owner-only beside the database', async () => {
    const first = await startDemo(database.url);
    running = first.server;
    assert.deepEqual(Object.keys(first.keys).sort(), ['ADMIN_KEY', 'READ_KEY', 'WRITE_KEY'], first.output);
    assert.match(first.output, /seeded with 300 mail events/);
    assert.match(first.output, /-H "Authorization: Bearer \$READ_KEY"/);
    await assertKeysWork(first.server, first.keys);
    await assertKitWorks(first.server, first.output, first.kit, first.keys.READ_KEY!);
    const path = demoKeysPath(database.url)!;
    assert.equal(statSync(path).mode & 0o777, 0o600);
    await first.server.stop();

    const second = await startDemo(database.url);
    running = second.server;
    assert.deepEqual(second.keys, first.keys, second.output);
    assert.doesNotMatch(second.output, /seeded with/, 'not seeded twice');
    await assertKeysWork(second.server, second.keys);
    assert.deepEqual(keysOf(second.kit), keysOf(first.kit), 'the same kit command');

    // A demo key revoked since is not offered again.
    const writeId = (await post(second.server, '/v1/list_keys', {}, second.keys.ADMIN_KEY!)).json.keys.find(
      (k: any) => k.label === 'demo write',
    ).id;
    assert.equal((await post(second.server, '/v1/revoke_key', { id: writeId }, second.keys.ADMIN_KEY!)).status, 200);
    await second.server.stop();
    const third = await startDemo(database.url);
    running = third.server;
    assert.deepEqual(Object.keys(third.keys).sort(), ['ADMIN_KEY', 'READ_KEY'], third.output);
    assert.match(third.output, /WRITE_KEY no longer works \(revoked\)/);
    assert.deepEqual(keysOf(third.kit), keysOf(first.kit), 'the kit needs no write key');
    await third.server.stop();

    // A demo database seeded before the kit's keys existed: they are seeded at its next start.
    const kept = JSON.parse(readFileSync(path, 'utf8'));
    delete kept.kit;
    writeFileSync(path, JSON.stringify(kept));
    const fourth = await startDemo(database.url);
    running = fourth.server;
    assert.match(fourth.output, /Seeded what the conformance kit needs/);
    await assertKitWorks(fourth.server, fourth.output, fourth.kit, fourth.keys.READ_KEY!);
    assert.ok(JSON.parse(readFileSync(path, 'utf8')).kit, 'kept beside the database');

    // A kit key revoked since: no command that would skip checks.
    const restrictedId = (await post(fourth.server, '/v1/list_keys', {}, fourth.keys.ADMIN_KEY!)).json.keys.find(
      (k: any) =>
        k.mailboxes !== null &&
        k.label.includes('conformance kit') &&
        fourth.kit.EVENT_FEED_RESTRICTED_KEY!.startsWith(`efk_${k.id.slice(4)}_`),
    ).id;
    assert.equal((await post(fourth.server, '/v1/revoke_key', { id: restrictedId }, fourth.keys.ADMIN_KEY!)).status, 200);
    await fourth.server.stop();
    const fifth = await startDemo(database.url);
    running = fifth.server;
    assert.deepEqual(fifth.kit, {}, fifth.output);
    assert.match(fifth.output, /The conformance kit's command is not printed: EVENT_FEED_RESTRICTED_KEY no longer works/);
  });
});
