import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const playwrightCli = join(root, 'node_modules', '@playwright', 'test', 'cli.js');

const cli = (databaseUrl: string, ...args: string[]) =>
  new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      [join(root, 'bin', 'event-feed.js'), ...args],
      { env: { ...process.env, DATABASE_URL: databaseUrl } },
      (error, stdout, stderr) => (error ? reject(new Error(`event-feed ${args.join(' ')}: ${stderr}`)) : resolve(stdout.trim())),
    );
  });

export interface KitKeys {
  EVENT_FEED_KEY: string;
  EVENT_FEED_RESTRICTED_KEY: string;
  EVENT_FEED_RESTRICTED_MAILBOXES: string;
  EVENT_FEED_NOREAD_KEY: string;
  EVENT_FEED_OTHER_KEY: string;
  EVENT_FEED_WRITE_KEY: string;
  EVENT_FEED_REVOKED_KEY: string;
  /** Not for the kit: a write key of the other workspace, to give it events of its own. */
  otherWriteKey: string;
}

/** Two workspaces and every key the kit takes, made with the CLI as an operator would. */
export async function provisionWithCli(databaseUrl: string): Promise<KitKeys> {
  // Only `migrate` (and `serve`) create a database: the other commands refuse a file that does not exist.
  await cli(databaseUrl, 'migrate');
  const workspace = await cli(databaseUrl, 'workspace', 'create', '--name', 'Conformité');
  const other = await cli(databaseUrl, 'workspace', 'create', '--name', 'Autre espace', '--verified');
  const key = (ws: string, permissions: string, ...extra: string[]) =>
    cli(databaseUrl, 'key', 'create', '--workspace', ws, '--permissions', permissions, ...extra);
  const revoked = await key(workspace, 'read');
  const listed = JSON.parse(await cli(databaseUrl, 'key', 'list', '--workspace', workspace)) as Array<{ id: string }>;
  await cli(databaseUrl, 'key', 'revoke', listed[0]!.id);
  return {
    EVENT_FEED_KEY: await key(workspace, 'read'),
    EVENT_FEED_RESTRICTED_KEY: await key(workspace, 'read', '--mailboxes', 'mbx_ventes,mbx_support'),
    EVENT_FEED_RESTRICTED_MAILBOXES: 'mbx_ventes,mbx_support',
    EVENT_FEED_NOREAD_KEY: await key(workspace, 'write'),
    EVENT_FEED_OTHER_KEY: await key(other, 'read'),
    EVENT_FEED_WRITE_KEY: await key(workspace, 'read,write'),
    EVENT_FEED_REVOKED_KEY: revoked,
    otherWriteKey: await key(other, 'write'),
  };
}

export interface KitResult {
  code: number;
  output: string;
  failed: string[];
  passed: string[];
  skipped: string[];
}

export interface KitOptions {
  projects?: string[];
  /** EVENT_FEED_ALLOW_WRITES: whether the kit may emit (default: yes when a write key is given). */
  allowWrites?: boolean;
  /** More of the kit's environment (EVENT_FEED_MAX_WAIT_SECONDS…). */
  env?: Record<string, string>;
  /** Only the spec files whose path matches one of these (Playwright's file filters): a run about one rule need not wait for every check. */
  specs?: string[];
}

/** Runs `npm run conformance`'s Playwright project(s) against a base URL; returns the verdicts by title. */
export function runKit(baseUrl: string, keys: Partial<KitKeys>, options: KitOptions = {}): Promise<KitResult> {
  const { projects = ['api'], allowWrites = keys.EVENT_FEED_WRITE_KEY !== undefined } = options;
  const dir = mkdtempSync(join(tmpdir(), 'conformance-'));
  const jsonReport = join(dir, 'report.json');
  const { otherWriteKey: _unused, ...kitKeys } = keys;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        playwrightCli,
        'test',
        ...(options.specs ?? []),
        '-c',
        join(root, 'conformance', 'playwright.config.ts'),
        ...projects.flatMap((p) => ['--project', p]),
      ],
      {
        cwd: root,
        timeout: 240_000,
        maxBuffer: 20 * 1024 * 1024,
        env: {
          ...process.env,
          ...kitKeys,
          EVENT_FEED_ALLOW_WRITES: allowWrites ? '1' : '',
          ...options.env,
          EVENT_FEED_BASE_URL: baseUrl,
          EVENT_FEED_JSON_REPORT: jsonReport,
          EVENT_FEED_REPORT_DIR: join(dir, 'html'),
          EVENT_FEED_OUTPUT_DIR: join(dir, 'results'),
        },
      },
      (error, stdout, stderr) => {
        const verdicts: Record<'failed' | 'passed' | 'skipped', string[]> = { failed: [], passed: [], skipped: [] };
        try {
          collect(JSON.parse(readFileSync(jsonReport, 'utf8')).suites, [], verdicts);
        } catch {
          // No report: the run itself broke; the exit code and output say how.
        }
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr, ...verdicts });
      },
    );
  });
}

function collect(suites: any[], path: string[], out: Record<'failed' | 'passed' | 'skipped', string[]>) {
  for (const suite of suites ?? []) {
    const here = suite.title && !suite.title.endsWith('.ts') ? [...path, suite.title] : path;
    for (const spec of suite.specs ?? []) {
      for (const t of spec.tests ?? []) {
        const status = t.results?.at(-1)?.status;
        const title = [...here, spec.title].join(' › ');
        if (status === 'skipped') out.skipped.push(title);
        else if (status === 'passed') out.passed.push(title);
        else out.failed.push(title);
      }
    }
    collect(suite.suites, here, out);
  }
}
