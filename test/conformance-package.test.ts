import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The environment of a user's shell: none of the npm_* variables `npm test` sets for its scripts. */
const userEnv = (extra: Record<string, string> = {}) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') && !name.startsWith('EVENT_FEED_'))),
  ...extra,
});

function run(command: string, args: string[], cwd: string, env = userEnv()): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout: 240_000, maxBuffer: 20 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

describe('the conformance kit as a package of its own', () => {
  let server: TestServer;
  let key: string;
  let admin: string;
  let dir: string;
  let bin: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kit-package-'));
    // npm pack builds the compiled kit (prepack) and leaves the tarball here.
    const packed = await run('npm', ['pack', '--pack-destination', dir], join(root, 'conformance'));
    assert.equal(packed.code, 0, packed.output);
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, packed.output);
    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), '{"private": true}\n');
    const installed = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, tarball)], app);
    assert.equal(installed.code, 0, installed.output);
    bin = join(app, 'node_modules', '.bin', 'event-feed-conformance');
    // The service as `npm start` runs it: default rate limits.
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '' });
    const workspace = await server.workspace();
    key = (await server.key(workspace, ['read'])).key;
    admin = (await server.key(workspace, ['read', 'write', 'admin'])).key;
    const writer = (await server.key(workspace, ['write'])).key;
    for (let i = 0; i < 3; i++) await server.post('/v1/emit_event', sampleEvent('mbx_ventes', i), writer);
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ships compiled JavaScript and depends only on @playwright/test', async () => {
    const tarball = join(
      dir,
      readdirSync(dir).find((f) => f.endsWith('.tgz'))!,
    );
    const listed = await run('tar', ['tzf', tarball], dir);
    const files = listed.output.trim().split('\n');
    assert.ok(files.includes('package/bin/event-feed-conformance.js'), files.join('\n'));
    assert.ok(files.includes('package/dist/playwright.config.js'));
    assert.deepEqual(
      files.filter((f) => f.endsWith('.ts')),
      [],
      'no TypeScript: Playwright does not transpile inside node_modules',
    );
    const manifest = JSON.parse((await run('tar', ['xzOf', tarball, 'package/package.json'], dir)).output);
    assert.deepEqual(Object.keys(manifest.dependencies), ['@playwright/test']);
  });

  it('passes a correct deployment from node_modules, exit status 0, with a report naming it', async () => {
    const result = await run(bin, ['--base-url', server.url, '--project', 'api'], join(dir, 'app'), userEnv({ EVENT_FEED_KEY: key }));
    assert.equal(result.code, 0, result.output.slice(-3000));
    assert.ok(result.output.includes(`deployment: ${server.url}`));
    assert.match(result.output, /service: +event-feed \d+\.\d+\.\d+, contract \d+\.\d+\.\d+/);
    assert.match(result.output, /^  PASS  ordering › ids are unique across the feed$/m);
    assert.match(result.output, /^  SKIP  auth › a key without read is refused with 403 forbidden: EVENT_FEED_NOREAD_KEY not given/m);
    assert.match(result.output, /^Conformance: no failure; \d+ check\(s\) passed, \d+ check\(s\) SKIPPED, not passed/m);
  });

  it('given an admin key, makes the keys it lacks and revokes them when the run ends (the compiled setup and teardown)', async () => {
    const active = async () => (await server.post('/v1/list_keys', {}, admin)).json.keys.map((k: { id: string }) => k.id).sort();
    const before = await active();
    // A file filter before --project: the option's list must not take it for a project.
    const result = await run(
      bin,
      ['--base-url', server.url, 'api/auth', '--project', 'api'],
      join(dir, 'app'),
      userEnv({ EVENT_FEED_ADMIN_KEY: admin }),
    );
    assert.equal(result.code, 0, result.output.slice(-3000));
    assert.match(result.output, /^  PASS  auth › a key without read is refused with 403 forbidden$/m);
    assert.match(result.output, /^  PASS  auth › a revoked key is refused with 401 unauthorized$/m);
    assert.doesNotMatch(result.output, /^  PASS  ordering/m, 'only the file asked for');
    assert.match(result.output, /revoked when the run ended: none left behind/);
    assert.deepEqual(await active(), before, 'list_keys: nothing left behind');
  });

  it('exits non-zero when a check fails, and its last line says so', async () => {
    const result = await run(bin, ['--base-url', server.url, '--key', 'efk_not_a_key', '--project', 'api'], join(dir, 'app'));
    assert.equal(result.code, 1, result.output.slice(-3000));
    assert.match(result.output, /^  FAIL  /m);
    assert.match(result.output.trim().split('\n').at(-1)!, /^Conformance: FAILED/);
    assert.doesNotMatch(result.output, /every check ran/);
  });

  it('skips the view visibly when no Chromium is found', async () => {
    const result = await run(
      bin,
      ['--base-url', server.url, '--project', 'view'],
      join(dir, 'app'),
      userEnv({ EVENT_FEED_KEY: key, CHROMIUM_PATH: '/nonexistent/chromium' }),
    );
    assert.equal(result.code, 0, result.output.slice(-3000));
    assert.match(result.output, /^  SKIP  French web view › .*: no Chromium at \/nonexistent\/chromium/m);
    assert.doesNotMatch(result.output, /^  PASS/m);
  });

  it('refuses a run without a base URL with a usage error (exit status 2)', async () => {
    const result = await run(bin, [], join(dir, 'app'));
    assert.equal(result.code, 2);
    assert.match(result.output, /--base-url \(or EVENT_FEED_BASE_URL\) is required/);
  });

  it('runs from a checkout as `event-feed conformance`, with the same exit status', async () => {
    const result = await run(
      process.execPath,
      [join(root, 'bin', 'event-feed.js'), 'conformance', '--base-url', server.url, '--project', 'api', '--', '--grep', 'cursors'],
      root,
      userEnv({ EVENT_FEED_KEY: 'efk_not_a_key' }),
    );
    assert.equal(result.code, 1, result.output.slice(-3000));
    assert.match(result.output, /^  FAIL  cursors › /m);
  });
});
