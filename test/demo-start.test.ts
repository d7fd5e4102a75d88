/**
 * `serve --seed-demo` (what `npm start` runs): prints ready-to-paste read, write and admin keys at
 * the first start, and the same keys again at every later start of that demo database; each key
 * works with its permission. Its keys are kept beside the database, readable by the owner only.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { demoKeysPath } from '../src/demo/demo-keys-file.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase, type TestDatabase } from './support/databases.ts';
import { startProcessServer, type ProcessServer } from './support/process-server.ts';
import { until } from './support/wait.ts';

const EXPORT = /^ {2}export (READ_KEY|WRITE_KEY|ADMIN_KEY)=(efk_\S+)$/gm;

async function startDemo(url: string): Promise<{ server: ProcessServer; keys: Record<string, string>; output: string }> {
  const server = await startProcessServer({ databaseUrl: url, serveArgs: ['--seed-demo'] });
  await until('the demo banner', () => server.output().includes('API reference:'), 10_000);
  const output = server.output();
  const keys = Object.fromEntries([...output.matchAll(EXPORT)].map((m) => [m[1]!, m[2]!]));
  return { server, keys, output };
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
  assert.deepEqual(listed.json.keys.map((k: any) => k.label).sort(), ['demo admin', 'demo read', 'demo write']);
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
    const path = demoKeysPath(database.url)!;
    assert.equal(statSync(path).mode & 0o777, 0o600);
    await first.server.stop();

    const second = await startDemo(database.url);
    running = second.server;
    assert.deepEqual(second.keys, first.keys, second.output);
    assert.doesNotMatch(second.output, /seeded with/, 'not seeded twice');
    await assertKeysWork(second.server, second.keys);

    // A demo key revoked since is not offered again.
    const writeId = (await post(second.server, '/v1/list_keys', {}, second.keys.ADMIN_KEY!)).json.keys.find((k: any) => k.label === 'demo write').id;
    assert.equal((await post(second.server, '/v1/revoke_key', { id: writeId }, second.keys.ADMIN_KEY!)).status, 200);
    await second.server.stop();
    const third = await startDemo(database.url);
    running = third.server;
    assert.deepEqual(Object.keys(third.keys).sort(), ['ADMIN_KEY', 'READ_KEY'], third.output);
    assert.match(third.output, /WRITE_KEY no longer works \(revoked\)/);
  });
});
