/**
 * The package as its users get it: packed with `npm pack` (which runs `prepare`, so the build),
 * installed from the tarball into an empty folder, imported with plain `node` (no tsx, no loader)
 * and type-checked by a TypeScript consumer against the declarations it ships.
 *
 * The pack runs in a copy of the sources (its `prepare` rebuilds dist/, which the other suites of
 * a parallel `npm test` run from). The install takes the dependencies from the npm cache
 * (--prefer-offline), without install scripts: better-sqlite3's would compile SQLite (about a
 * minute on two cores, measured); its compiled binding is taken from this checkout's
 * node_modules instead, the same version (checked), built the same way.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { VIEW_BUNDLE_BANNER } from '../src/http/view-bundle.ts';
import { sampleEvent } from './support/contract.ts';
import { typecheckConsumer } from './support/typecheck-consumer.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
/** What a clone has that a package must not be built from (outputs, local state, dependencies). */
const NOT_COPIED = new Set(['node_modules', 'dist', '.git', 'data', 'test-results', 'playwright-report']);

/** A child's environment without anything that would load TypeScript (tsx) into plain `node`. */
function plainEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.NODE_OPTIONS;
  return env;
}

describe('the package, packed and installed from its tarball', { timeout: 240_000 }, () => {
  let work: string;
  let consumer: string;
  let installed: string;
  const children: ChildProcess[] = [];

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'event-feed-package-'));
    const source = join(work, 'source');
    cpSync(root, source, { recursive: true, filter: (path) => !NOT_COPIED.has(relative(root, path).split(/[\\/]/)[0]!) });
    symlinkSync(realpathSync(join(root, 'node_modules')), join(source, 'node_modules'));
    await run('npm', ['pack', '--pack-destination', work], { cwd: source, env: plainEnv(), maxBuffer: 16 << 20 });
    const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote no tarball');

    consumer = join(work, 'consumer');
    mkdirSync(consumer);
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', join(work, tarball)], {
      cwd: consumer,
      env: plainEnv(),
      maxBuffer: 16 << 20,
    });
    installed = join(consumer, 'node_modules', 'event-feed');

    const ours = join(root, 'node_modules', 'better-sqlite3');
    const theirs = join(consumer, 'node_modules', 'better-sqlite3');
    const version = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
    assert.equal(version(theirs), version(ours), 'the installed better-sqlite3 is the version whose binding this checkout has');
    mkdirSync(join(theirs, 'build', 'Release'), { recursive: true });
    copyFileSync(join(ours, 'build', 'Release', 'better_sqlite3.node'), join(theirs, 'build', 'Release', 'better_sqlite3.node'));
  });

  after(() => {
    for (const child of children) child.kill();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('holds the compiled library, its declarations, what the service reads and its documentation (README.md links into docs/), and no tests, benchmarks or build scripts', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    assert.deepEqual(manifest.exports['.'], { types: './dist/src/library.d.ts', default: './dist/src/library.js' });
    const files = readdirSync(installed, { recursive: true }).map(String);
    for (const file of [
      'dist/src/library.js',
      'dist/src/library.d.ts',
      'dist/src/cli/main.js',
      'dist/view/view.js',
      'dist/BUILT',
      'generated/openapi.json',
      'openapi.yaml',
      'src/store/sqlite/checkpoint-worker.cjs',
      'bin/event-feed.js',
      'README.md',
      'docs/reading-the-feed.md',
    ]) {
      assert.ok(files.includes(file), `${file} is in the package`);
    }
    assert.deepEqual(
      files.filter((file) => /^(test|bench|dist\/bench|scripts)(\/|$)/.test(file)),
      [],
    );
  });

  it('plain node imports it, publishes in a transaction, and the installed service serves the events back', async () => {
    const databaseUrl = `sqlite:${join(consumer, 'feed.sqlite')}`;
    const cli = async (...args: string[]) =>
      (
        await run(join(consumer, 'node_modules', '.bin', 'event-feed'), args, {
          cwd: consumer,
          env: plainEnv({ DATABASE_URL: databaseUrl }),
        })
      ).stdout.trim();
    // Only `migrate` and `serve` create a database: the CLI never makes an empty one by mistake.
    await cli('migrate');
    const workspace = await cli('workspace', 'create', '--name', 'Boutique');
    const readKey = await cli('key', 'create', '--workspace', workspace, '--permissions', 'read');

    const event = { ...sampleEvent('mbx_sales', 1), id: 'evt_01M7YP7PAG3YR9FGTGP73H5R7W' };
    writeFileSync(
      join(consumer, 'publish.mjs'),
      `import { publish, openDatabase, migrateLatest } from 'event-feed';
const [url, workspace, event] = [process.argv[2], process.argv[3], JSON.parse(process.argv[4])];
const db = openDatabase(url);
await migrateLatest(db);
await db.schema.createTable('orders', (t) => { t.text('id').primary(); });
// The application's own write and the events commit together...
const published = await db.transaction(async (trx) => {
  await trx('orders').insert({ id: 'order_1' });
  return publish(trx, workspace, [event, { ...event, id: undefined }]);
});
// ...or vanish together.
await db.transaction(async (trx) => {
  await trx('orders').insert({ id: 'order_2' });
  await publish(trx, workspace, [{ ...event, id: undefined }]);
  throw new Error('changed its mind');
}).catch(() => {});
const [replay] = await db.transaction((trx) => publish(trx, workspace, [event]));
const orders = (await db('orders').select('id')).map((row) => row.id);
await db.destroy();
console.log(JSON.stringify({ resolved: import.meta.resolve('event-feed'), execArgv: process.execArgv, published, replay, orders }));
`,
    );
    const { stdout } = await run(process.execPath, ['publish.mjs', databaseUrl, workspace, JSON.stringify(event)], {
      cwd: consumer,
      env: plainEnv(),
    });
    const out = JSON.parse(stdout);
    assert.match(out.resolved, /\/node_modules\/event-feed\/dist\/src\/library\.js$/, 'the compiled entry point, not a .ts file');
    assert.deepEqual(out.execArgv, [], 'plain node: no loader');
    assert.deepEqual(
      out.published.map((p: { created: boolean }) => p.created),
      [true, true],
    );
    assert.deepEqual(out.replay, { envelope: out.published[0].envelope, created: false });
    assert.deepEqual(out.orders, ['order_1']);

    // Read back through the installed service, started as a user would (its bin, plain node).
    const server = spawn(join(consumer, 'node_modules', '.bin', 'event-feed'), ['serve'], {
      cwd: consumer,
      env: plainEnv({ DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'info' }),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(server);
    let url: string | undefined;
    for await (const line of createInterface({ input: server.stdout! })) {
      url = (JSON.parse(line) as { url?: string }).url;
      if (url) break;
    }
    assert.ok(url, 'the service said where it listens');
    const res = await fetch(`${url}/v1/event_feed`, {
      method: 'POST',
      headers: { authorization: `Bearer ${readKey}`, 'content-type': 'application/json' },
      body: '{}',
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.ok(text.includes(`"events":[${out.published[0].envelope},${out.published[1].envelope}]`), text);
    // The web view's script: the bundle the build wrote from its TypeScript (dist/view/view.js).
    const view = await fetch(`${url}/view.js`);
    assert.equal(view.status, 200);
    assert.ok((await view.text()).startsWith(VIEW_BUNDLE_BANNER), "the view's bundle");
    server.kill();
  });

  it('a TypeScript consumer type-checks against the shipped declarations (strict, library checks on)', async () => {
    writeFileSync(
      join(consumer, 'consumer.ts'),
      `import { ApiError, migrateLatest, openDatabase, publish, type EmitEventRequest, type PublishedEvent } from 'event-feed';

const db = openDatabase('sqlite:feed.sqlite');
const applied: string[] = await migrateLatest(db);
const event: EmitEventRequest = {
  type: 'mail.received',
  subject: { person: { email: 'claire.dubois@exemple.fr' }, refs: { mailbox_id: 'mbx_sales' } },
  data: {
    internet_message_id: '<m1@exemple.fr>',
    from: { email: 'claire.dubois@exemple.fr' },
    to: [{ email: 'contact@boutique.fr' }],
    subject_line: 'Commande 10482',
    size_bytes: 4821,
    attachment_count: 0,
    spam_score: 0.4,
    spam_verdict: 'pass',
  },
};
const published: PublishedEvent[] = await db.transaction((trx) => publish(trx, 'ws_x', [event]));
const created: boolean = published[0]!.created;
const envelope: string = published[0]!.envelope;
console.log(applied, created, envelope, new ApiError('invalid_argument', 'x').code);
// The declarations are real types, not any: these must be refused.
// @ts-expect-error publish takes the caller's transaction first
await publish('ws_x', [event]);
// @ts-expect-error an event type is one of the contract's
const wrong: EmitEventRequest = { ...event, type: 'mail.opened' };
// @ts-expect-error data is typed by the event's type: a received mail has a sender
const incomplete: EmitEventRequest = { ...event, data: { internet_message_id: '<m2@exemple.fr>' } };
await db.destroy();
`,
    );
    const result = await typecheckConsumer(consumer, ['consumer.ts'], plainEnv());
    assert.equal(result.output, '', 'tsc reports nothing');
  });
});
