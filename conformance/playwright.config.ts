import { defineConfig } from '@playwright/test';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const baseURL = process.env.EVENT_FEED_BASE_URL;
if (!baseURL) throw new Error('EVENT_FEED_BASE_URL is required: the address of the deployment to check (see conformance/README.md)');

export default defineConfig({
  testDir: here,
  // One worker, in order: the checks share the deployment's feed and some emit events into it.
  workers: 1,
  fullyParallel: false,
  retries: 0,
  timeout: 120_000,
  reporter: [
    ['list'],
    ['html', { outputFolder: process.env.EVENT_FEED_REPORT_DIR ?? join(here, '..', 'playwright-report'), open: 'never' }],
    ['./support/skip-reporter.ts'],
    ...(process.env.EVENT_FEED_JSON_REPORT ? [['json', { outputFile: process.env.EVENT_FEED_JSON_REPORT }] as ['json', { outputFile: string }]] : []),
  ],
  outputDir: process.env.EVENT_FEED_OUTPUT_DIR ?? join(here, '..', 'test-results'),
  use: { baseURL, extraHTTPHeaders: {} },
  projects: [
    { name: 'api', testMatch: /api\/.*\.spec\.ts$/ },
    {
      name: 'view',
      testMatch: /view\/.*\.spec\.ts$/,
      use: {
        browserName: 'chromium',
        // Debian's Chromium: Playwright never downloads a browser here.
        launchOptions: {
          executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
          args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
        },
      },
    },
  ],
});
