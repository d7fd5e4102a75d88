import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { isPermission, keyIdOf, listKeys } from '../auth/api-keys.ts';
import { revokeKeyEverywhere } from '../auth/revoke-everywhere.ts';
import type { Permission } from '../auth/principal.ts';
import { ConfigError, loadConfig, parseWorkerCount } from '../app/config.ts';
import { serve } from './serve.ts';
import { createLogger } from '../base/log.ts';
import { systemClock } from '../base/clock.ts';
import { openStore, type OpenedStore } from '../store/open-store.ts';
import { packageFile } from '../base/paths.ts';
import { displayedDatabaseUrl, missingDatabaseProblem } from './database-choice.ts';
import { createKeyAsOperator, KEY_REQUEST_LIMITS } from './key-create.ts';

class CliError extends Error {}

/** Says on stderr which database a command works on (never a password). */
function announceDatabase(url: string): void {
  console.error(`event-feed: database ${displayedDatabaseUrl(url)}`);
}

/**
 * Runs a command against the database of DATABASE_URL (migrated first, unless told not to), then
 * closes it. Only a command told it may create the database runs on a SQLite file that does not
 * exist yet (missingDatabaseProblem).
 */
async function withDatabase<T>(
  work: (store: OpenedStore) => Promise<T>,
  options: { migrate?: boolean; mayCreate?: boolean } = {},
): Promise<T> {
  const { databaseUrl } = loadConfig();
  announceDatabase(databaseUrl);
  if (!options.mayCreate) {
    const problem = missingDatabaseProblem(databaseUrl, Boolean(process.env.DATABASE_URL));
    if (problem) throw new CliError(problem);
  }
  const store = openStore(databaseUrl, { queryTimeoutMs: 0 });
  try {
    if (options.migrate ?? true) await store.migrate();
    return await work(store);
  } finally {
    await store.close();
  }
}

function parseWorkers(value: string): number {
  try {
    return parseWorkerCount(value, '--workers');
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

function parsePermissions(value: string): Permission[] {
  const permissions = value
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const unknown = permissions.filter((p) => !isPermission(p));
  if (permissions.length === 0 || unknown.length) {
    throw new InvalidArgumentError(
      `permissions are a comma-separated list of read, write, admin (unknown: ${unknown.join(', ') || 'none given'})`,
    );
  }
  return [...new Set(permissions)] as Permission[];
}

function parseMailboxes(value: string): string[] {
  const mailboxes = value
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean);
  const bad = mailboxes.filter((m) => !KEY_REQUEST_LIMITS.mailboxId.test(m));
  if (mailboxes.length === 0 || bad.length) {
    throw new InvalidArgumentError(
      `mailboxes are a comma-separated list of mailbox ids like mbx_sales (invalid: ${bad.join(', ') || 'none given'})`,
    );
  }
  const distinct = [...new Set(mailboxes)];
  const { maxMailboxes } = KEY_REQUEST_LIMITS;
  if (distinct.length > maxMailboxes)
    throw new InvalidArgumentError(`a key may be restricted to at most ${maxMailboxes} mailboxes (got ${distinct.length})`);
  return distinct;
}

function parseLabel(value: string): string {
  const label = value.trim();
  const { min, max } = KEY_REQUEST_LIMITS.labelLength;
  if (label.length < min || label.length > max) throw new InvalidArgumentError(`a label has ${min} to ${max} characters`);
  return label;
}

const { version } = JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { version: string };

// Commands load what they use when they run (dynamic imports below): `serve --workers`' primary,
// which only migrates and supervises, stays small, and a short command starts faster.
const program = new Command('event-feed')
  .description('Stores mail events and serves them again by cursor (HTTP and MCP). Honours DATABASE_URL.')
  .version(version, '-V, --version', 'print the version of event-feed')
  .showHelpAfterError()
  .exitOverride();

program
  .command('serve')
  .description('serve HTTP on HOST:PORT (default 127.0.0.1:3000); applies migrations first')
  .option(
    '--seed-demo',
    'on an empty database, seed a demo workspace and what the conformance kit needs; print its read, write and admin keys and the kit command at every start',
  )
  .option('--workers <n>', 'processes that share the port (a number, or auto: one per core); default WORKERS, else 1', parseWorkers)
  .action(async (options: { seedDemo?: boolean; workers?: number }) => {
    const config = loadConfig();
    if (cluster.isPrimary) announceDatabase(config.databaseUrl);
    await serve(config, { seedDemo: options.seedDemo, workers: options.workers ?? config.workers });
  });

program
  .command('migrate')
  .description('apply pending database migrations')
  .action(() =>
    withDatabase(
      async (store) => {
        const applied = await store.migrate();
        console.error(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
      },
      { migrate: false, mayCreate: true },
    ),
  );

program
  .command('erase')
  .description("erase people by email address from a workspace's events (erase_person, run to its end); prints the log entry")
  .requiredOption('--workspace <id>', 'the workspace')
  .argument('<emails...>', 'the addresses (1 to 100)')
  .action((emails: string[], options: { workspace: string }) =>
    withDatabase(async (store) => {
      const config = loadConfig();
      const [{ createServices }, { eraseAsOperator }] = await Promise.all([import('../app/services.ts'), import('./erase.ts')]);
      const services = await createServices(store, config);
      console.log(JSON.stringify(await eraseAsOperator(services, options.workspace, emails), null, 2));
    }),
  );

program
  .command('prune')
  .description('delete events older than RETENTION_DAYS now, in bounded batches (the server also does it on a schedule)')
  .action(() =>
    withDatabase(async (store) => {
      const config = loadConfig();
      const [{ createServices }, { pruneExpired }] = await Promise.all([
        import('../app/services.ts'),
        import('../app/retention-schedule.ts'),
      ]);
      const services = await createServices(store, config);
      const results = await pruneExpired(services, config);
      const deleted = results.reduce((n, r) => n + r.deleted, 0);
      console.log(
        JSON.stringify({ retention_days: config.retentionDays, deleted, workspaces: results.filter((r) => r.deleted > 0) }, null, 2),
      );
    }),
  );

program
  .command('demo')
  .description('seed a demo workspace with realistic mail events; prints its id and keys')
  .action(() =>
    withDatabase(async (store) => {
      const { seedDemoWorkspace } = await import('../demo/seed.ts');
      const demo = await seedDemoWorkspace(store, systemClock);
      console.log(
        JSON.stringify(
          {
            workspace_id: demo.workspaceId,
            read_key: demo.readKey,
            write_key: demo.writeKey,
            admin_key: demo.adminKey,
            events: demo.eventCount,
          },
          null,
          2,
        ),
      );
    }),
  );

const workspace = program.command('workspace').description('manage workspaces');
workspace
  .command('create')
  .description('create a workspace; prints its id alone on stdout')
  .requiredOption('--name <name>', 'display name')
  .option('--verified', 'mark the workspace as verified', false)
  .action((options: { name: string; verified: boolean }) =>
    withDatabase(async (store) => {
      if (!options.name.trim()) throw new CliError('--name must not be empty');
      const created = await store.createWorkspace(options.name.trim(), options.verified, Date.now());
      console.log(created.id);
    }),
  );

workspace
  .command('list')
  .description('list the workspaces as JSON: id, name, verified, created_at')
  .action(() =>
    withDatabase(async (store) => {
      console.log(JSON.stringify(await store.listWorkspaces(), null, 2));
    }),
  );

const key = program.command('key').description('manage API keys');
key
  .command('create')
  .description('create an API key; prints the key alone on stdout (it is shown only this once)')
  .requiredOption('--workspace <id>', 'workspace id (ws_…)')
  .requiredOption('--permissions <list>', 'comma-separated: read, write, admin', parsePermissions)
  .option('--mailboxes <list>', 'restrict the key to these mailboxes (comma-separated mbx_… ids)', parseMailboxes)
  .option('--label <text>', `a note to recognise the key by (at most ${KEY_REQUEST_LIMITS.labelLength.max} characters)`, parseLabel)
  .action((options: { workspace: string; permissions: Permission[]; mailboxes?: string[]; label?: string }) =>
    withDatabase(async (store) => {
      if (!(await store.findWorkspace(options.workspace))) throw new CliError(`no workspace ${options.workspace}`);
      // Through create_key, as the API would: its validation, its per-workspace limit, its errors.
      const created = await createKeyAsOperator(store, systemClock, options.workspace, {
        permissions: options.permissions,
        ...(options.mailboxes ? { mailboxes: options.mailboxes } : {}),
        ...(options.label === undefined ? {} : { label: options.label }),
      });
      console.error(`created ${created.api_key.id}`);
      console.log(created.key);
    }),
  );
key
  .command('list')
  .description("list a workspace's keys (never their secrets)")
  .requiredOption('--workspace <id>', 'workspace id (ws_…)')
  .action((options: { workspace: string }) =>
    withDatabase(async (store) => {
      if (!(await store.findWorkspace(options.workspace))) throw new CliError(`no workspace ${options.workspace}`);
      console.log(JSON.stringify(await listKeys(store, options.workspace), null, 2));
    }),
  );
key
  .command('revoke')
  .description('revoke a key, named by its id (key_…) or by the key itself (efk_…); takes effect at once')
  .argument('<key>', 'the key id shown by "key create" or "key list", or the key')
  .action((given: string) =>
    withDatabase(async (store) => {
      // Named by the key itself: only its id is used, and printed; the secret never is.
      const keyId = given.startsWith('efk_') ? keyIdOf(given) : given;
      if (!keyId) throw new CliError('that is not a well-formed key (efk_…) or key id (key_…)');
      if (!(await revokeKeyEverywhere(store, keyId, Date.now()))) throw new CliError(`no active key ${keyId}`);
      console.error(`revoked ${keyId}`);
    }),
  );

program
  .command('conformance')
  .description('check a deployment against the contract with the conformance kit (conformance/README.md; --help lists its options)')
  .helpOption(false)
  .allowUnknownOption()
  .allowExcessArguments()
  .argument('[options...]', "the kit's options: --base-url URL --key KEY [--allow-writes] [--project api] …")
  .action(async (args: string[]) => {
    const { runConformanceKit } = await import('./conformance.ts');
    process.exitCode = await runConformanceKit(args);
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exit(err.exitCode);
  if (err instanceof CliError || err instanceof ConfigError) {
    console.error(`event-feed: ${err.message}`);
    process.exit(1);
  }
  console.error(`event-feed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
