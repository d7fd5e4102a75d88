import { defineConfig } from '@playwright/test';
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumPath } from './support/chromium.ts';
import { maxWaitSeconds } from './support/rate-limits.ts';
import { WRITES_TAG, writesAllowed } from './support/writes.ts';

const here = dirname(fileURLToPath(import.meta.url));
// The same config runs from the sources (.ts, in the repository) and compiled (.js, the published package).
const ext = fileURLToPath(import.meta.url).endsWith('.js') ? 'js' : 'ts';
const baseURL = process.env.EVENT_FEED_BASE_URL;
if (!baseURL) throw new Error('EVENT_FEED_BASE_URL is required: the address of the deployment to check (see conformance/README.md)');
const outputDir = process.env.EVENT_FEED_OUTPUT_DIR ?? join(process.cwd(), 'test-results');
// One ledger of rate-limit waits for the whole run, in its output folder: the runner (no
// TEST_WORKER_INDEX) starts it empty; its workers, which load this config too, add to it.
process.env.EVENT_FEED_WAIT_LEDGER = join(outputDir, '.rate-limit-waits');
// The keys the kit makes with EVENT_FEED_ADMIN_KEY (KeyLedger), the same way.
process.env.EVENT_FEED_KEY_LEDGER = join(outputDir, '.made-keys.json');
if (process.env.TEST_WORKER_INDEX === undefined) {
  mkdirSync(outputDir, { recursive: true });
  rmSync(process.env.EVENT_FEED_WAIT_LEDGER, { force: true });
  rmSync(process.env.EVENT_FEED_KEY_LEDGER, { force: true });
}

export default defineConfig({
  testDir: here,
  // A read-only run is made of the read-only checks: those that emit events (tagged @writes) are
  // not part of it, and the report says so (ConformanceReporter), rather than listing
  // each as skipped. With --allow-writes they run (skipped, with the reason, without a write key).
  ...(writesAllowed() ? {} : { grepInvert: WRITES_TAG }),
  // With EVENT_FEED_ADMIN_KEY, the keys the run lacks are made before the checks and revoked after
  // them, whatever happened (provisionKeys, revokeMadeKeys).
  globalSetup: `./support/global-setup.${ext}`,
  globalTeardown: `./support/global-teardown.${ext}`,
  // From the sources, not the package's build (npm pack leaves one in dist/).
  testIgnore: ext === 'ts' ? ['**/dist/**'] : [],
  // One worker, in order: the checks share the deployment's feed and some emit events into it.
  workers: 1,
  fullyParallel: false,
  retries: 0,
  // A check may also wait out the deployment's rate limit, up to the run's bound.
  timeout: 120_000 + maxWaitSeconds() * 1000,
  reporter: [
    ['list'],
    ['html', { outputFolder: process.env.EVENT_FEED_REPORT_DIR ?? join(process.cwd(), 'playwright-report'), open: 'never' }],
    [`./support/conformance-reporter.${ext}`],
    ...(process.env.EVENT_FEED_JSON_REPORT
      ? [['json', { outputFile: process.env.EVENT_FEED_JSON_REPORT }] as ['json', { outputFile: string }]]
      : []),
  ],
  outputDir,
  use: { baseURL, extraHTTPHeaders: {} },
  projects: [
    { name: 'api', testMatch: /api\/.*\.spec\.[jt]s$/ },
    {
      name: 'view',
      testMatch: /view\/.*\.spec\.[jt]s$/,
      use: {
        browserName: 'chromium',
        // Debian's Chromium: Playwright never downloads a browser here.
        launchOptions: {
          executablePath: chromiumPath(),
          args: [
            '--no-sandbox',
            '--disable-gpu',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
            '--no-first-run',
          ],
        },
      },
    },
  ],
});
