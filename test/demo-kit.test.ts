/**
 * The kit in one paste: a fresh `npm start` (serve --seed-demo, default rate limits) prints the
 * conformance kit's variables and command; pasted as printed into a reader's shell, elsewhere than
 * the checkout, it runs every read-only check against the demo and skips none (the web view's too,
 * where Chromium is installed; without it, those alone are skipped, as the banner warns).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sqliteDatabase, type TestDatabase } from './support/databases.ts';
import { startProcessServer, type ProcessServer } from './support/process-server.ts';
import { until } from './support/wait.ts';

const chromium = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** The banner's kit block, as a reader selects it: from its first export to its command, unindented. */
function kitBlock(banner: string): string {
  const lines = banner.split('\n');
  const first = lines.findIndex((line) => line.startsWith('  export EVENT_FEED_BASE_URL='));
  const last = lines.findIndex((line, i) => i > first && line.includes('npx event-feed conformance'));
  assert.ok(first >= 0 && last > first, `no kit command in the banner:\n${banner}`);
  return `${lines
    .slice(first, last + 1)
    .map((line) => line.slice(2))
    .join('\n')}\n`;
}

describe('the demo prints one kit command that runs every read-only check, none skipped', () => {
  let database: TestDatabase;
  let server: ProcessServer;
  let work: string;

  before(async () => {
    database = await sqliteDatabase();
    // As `npm start` serves: the default rate limits.
    server = await startProcessServer({ databaseUrl: database.url, serveArgs: ['--seed-demo'], env: { RATE_LIMIT_PER_SECOND: '' } });
    await until('the demo banner', () => server.output().includes('API reference:'), 10_000);
    work = mkdtempSync(join(tmpdir(), 'demo-kit-'));
  });
  after(async () => {
    await server?.stop();
    await database?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('pasted as printed, from another folder', { timeout: 900_000 }, async () => {
    const block = kitBlock(server.output());
    if (existsSync(chromium)) assert.doesNotMatch(server.output(), /No Chromium at/);
    else assert.match(server.output(), /No Chromium at .*the kit will skip the web view's checks/);
    // A reader's shell: none of the variables `npm test` sets for its scripts, nor the kit's; its
    // reports go to a folder of the test's (they are not the checks' input).
    const shell = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') && !name.startsWith('EVENT_FEED_')),
    ) as Record<string, string>;
    const env = { ...shell, EVENT_FEED_OUTPUT_DIR: join(work, 'results'), EVENT_FEED_REPORT_DIR: join(work, 'html') };
    const result = await new Promise<{ code: number; output: string }>((resolve) =>
      execFile(
        'bash',
        ['-euo', 'pipefail', '-c', block],
        { cwd: work, env, timeout: 840_000, maxBuffer: 20 * 1024 * 1024 },
        (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
      ),
    );
    const tail = result.output.slice(-5000);
    assert.equal(result.code, 0, tail);
    assert.doesNotMatch(result.output, /^ {2}FAIL /m, tail);
    const skipped = result.output.split('\n').filter((line) => line.startsWith('  SKIP  '));
    if (existsSync(chromium)) {
      assert.deepEqual(skipped, [], 'nothing skipped');
      assert.match(
        result.output,
        /^Conformance: every read-only check ran and passed \(\d+\); the checks that emit events were not run \(read-only run\)\.$/m,
        tail,
      );
    } else {
      assert.deepEqual(
        skipped.filter((line) => !line.startsWith('  SKIP  French web view › ')),
        [],
        'only the view (no Chromium) is skipped',
      );
    }
    const passed = Number(/(\d+) passed/.exec(result.output)?.[1]);
    assert.ok(passed >= 45, `${passed} checks passed`);
    assert.match(result.output, /^ {2}PASS {2}scoping › another workspace's key never sees this workspace's events$/m);
    assert.match(result.output, /^ {2}PASS {2}auth › a key without read is refused with 403 forbidden$/m);
    assert.match(result.output, /^ {2}PASS {2}auth › a revoked key is refused with 401 unauthorized$/m);
    assert.match(result.output, /^ {2}PASS {2}scoping › the restricted key sees the full feed filtered to its mailboxes$/m);
  });
});
