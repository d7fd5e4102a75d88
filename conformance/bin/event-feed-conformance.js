#!/usr/bin/env node
// event-feed-conformance: runs the conformance kit (Playwright Test) against a deployment.
// Options set the kit's environment variables; variables already set are taken as they are.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const kit = dirname(dirname(fileURLToPath(import.meta.url)));

/** Each option and the variable it sets (conformance/README.md). */
const VALUED = {
  'base-url': 'EVENT_FEED_BASE_URL',
  key: 'EVENT_FEED_KEY',
  'restricted-key': 'EVENT_FEED_RESTRICTED_KEY',
  'restricted-mailboxes': 'EVENT_FEED_RESTRICTED_MAILBOXES',
  'noread-key': 'EVENT_FEED_NOREAD_KEY',
  'other-key': 'EVENT_FEED_OTHER_KEY',
  'write-key': 'EVENT_FEED_WRITE_KEY',
  'revoked-key': 'EVENT_FEED_REVOKED_KEY',
  'admin-key': 'EVENT_FEED_ADMIN_KEY',
  'max-events': 'EVENT_FEED_MAX_EVENTS',
  'max-wait-seconds': 'EVENT_FEED_MAX_WAIT_SECONDS',
  'report-dir': 'EVENT_FEED_REPORT_DIR',
  'json-report': 'EVENT_FEED_JSON_REPORT',
};

const HELP = `Usage: event-feed-conformance --base-url URL [options] [-- playwright options]

Checks a deployment of event-feed against its contract, through its public interface only.
Read-only unless --allow-writes. Exit status: 0 when no check failed, 1 when one did (skipped
checks are listed with their reason, never counted as passed), 2 on a usage error.

Options (each also read from its environment variable; prefer the variables for keys, which
otherwise show in the process list). With an admin key, the kit makes every key it was not
given through create_key and revokes them all when the run ends (a key of another workspace
it cannot make: give --other-key for the checks of isolation between workspaces):
${Object.entries(VALUED)
  .map(([option, variable]) => `  --${option.padEnd(22)} ${variable}`)
  .join('\n')}
  --allow-writes           EVENT_FEED_ALLOW_WRITES=1: let the kit emit its (marked) events
  --project api|view       run only these checks (repeatable; default both: the view's checks
                           skip when no Chromium is found, CHROMIUM_PATH or /usr/bin/chromium)
  -h, --help               this help`;

let parsed;
try {
  parsed = parseArgs({
    args: process.argv.slice(2),
    options: {
      ...Object.fromEntries(Object.keys(VALUED).map((name) => [name, { type: 'string' }])),
      'allow-writes': { type: 'boolean' },
      project: { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
  });
} catch (error) {
  console.error(`event-feed-conformance: ${error.message}\n\n${HELP}`);
  process.exit(2);
}
const { values, positionals } = parsed;
if (values.help) {
  console.log(HELP);
  process.exit(0);
}

const env = { ...process.env };
for (const [option, variable] of Object.entries(VALUED)) if (values[option] !== undefined) env[variable] = values[option];
if (values['allow-writes']) env.EVENT_FEED_ALLOW_WRITES = '1';
if (!env.EVENT_FEED_BASE_URL) {
  console.error(`event-feed-conformance: --base-url (or EVENT_FEED_BASE_URL) is required\n\n${HELP}`);
  process.exit(2);
}
for (const project of values.project ?? []) {
  if (!['api', 'view'].includes(project)) {
    console.error(`event-feed-conformance: --project is api or view (got ${project})`);
    process.exit(2);
  }
}

// A repository checkout runs the TypeScript sources (a dist/ there may be stale); the published
// package, which ships no sources, its compiled kit.
const sources = join(kit, 'playwright.config.ts');
const config = existsSync(sources) ? sources : join(kit, 'dist', 'playwright.config.js');
const playwright = createRequire(import.meta.url).resolve('@playwright/test/cli');
// Playwright's file filters (positionals) before --project, whose list would take them as projects.
const args = [playwright, 'test', '-c', config, ...positionals, ...(values.project ?? []).flatMap((p) => ['--project', p])];
const child = spawn(process.execPath, args, { env, stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
