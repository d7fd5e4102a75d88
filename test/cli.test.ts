/**
 * The command line (bin/event-feed.js → src/cli/main.ts) on a SQLite file given by DATABASE_URL.
 * Each spawn costs about a second (tsx start-up): independent invocations run a few at a time.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { authenticate } from '../src/auth/api-keys.ts';
import { openDatabase, type Db } from '../src/store/db.ts';
import { findWorkspace } from '../src/store/workspaces.ts';
import { sqliteDatabase, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { migrationSource } from '../src/store/migrate.ts';

const allMigrations = async () => (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(url: string, args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: url };
  delete env.EVENT_FEED_SECRET;
  delete env.NODE_OPTIONS; // the test runner's own loader options are not the CLI's business
  return new Promise((done) => {
    execFile(process.execPath, ['bin/event-feed.js', ...args], { cwd: ROOT, env, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

/** Runs invocations at most `width` at a time (2 cores). */
async function cliAll(url: string, argLists: string[][], width = 3): Promise<Run[]> {
  const results: Run[] = new Array(argLists.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < argLists.length) {
        const i = next++;
        results[i] = await cli(url, argLists[i]!);
      }
    }),
  );
  return results;
}

const show = (run: Run) => `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;

describe('cli on a sqlite file', () => {
  let database: TestDatabase;
  let db: Db;
  let workspaceId = '';
  let created: { id: string; key: string } | undefined;

  before(async () => {
    database = await sqliteDatabase();
    db = openDatabase(database.url);
  });
  after(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('workspace create prints exactly one line, the id (and migrates a fresh file by itself)', async () => {
    const run = await cli(database.url, ['workspace', 'create', '--name', '  Atelier Lumière  ']);
    assert.equal(run.code, 0, show(run));
    assert.match(run.stdout, /^ws_[0-9A-HJKMNP-TV-Z]{26}\n$/, show(run));
    workspaceId = run.stdout.trim();
    assert.deepEqual(await findWorkspace(db, workspaceId), { id: workspaceId, name: 'Atelier Lumière', verified: false });
    const counter = await db('feed_counters').where({ workspace_id: workspaceId }).first();
    assert.equal(Number(counter.last_seq), 0);
  });

  it('workspace create --verified marks the workspace verified', async () => {
    const run = await cli(database.url, ['workspace', 'create', '--name', 'Verified shop', '--verified']);
    assert.equal(run.code, 0, show(run));
    assert.match(run.stdout, /^ws_[0-9A-HJKMNP-TV-Z]{26}\n$/, show(run));
    const row = await db('workspaces').where({ id: run.stdout.trim() }).first();
    assert.equal(row.name, 'Verified shop');
    assert.equal(Boolean(row.verified), true);
    assert.equal(Boolean((await db('workspaces').where({ id: workspaceId }).first()).verified), false);
  });

  it('key create prints the key alone on stdout, stores only its hash and the restrictions', async () => {
    assert.ok(workspaceId, 'needs the workspace of the first test');
    const run = await cli(database.url, ['key', 'create', '--workspace', workspaceId, '--permissions', 'read,write', '--mailboxes', 'mbx_a,mbx_b']);
    assert.equal(run.code, 0, show(run));
    const match = /^(efk_([0-9A-HJKMNP-TV-Z]{26})_[A-Za-z0-9_-]{43})\n$/.exec(run.stdout);
    assert.ok(match, show(run));
    created = { id: `key_${match[2]}`, key: match[1]! };
    assert.ok(!run.stderr.includes(created.key), 'the key is not repeated on stderr');

    const rows = await db('api_keys').where({ workspace_id: workspaceId });
    assert.equal(rows.length, 1);
    assert.equal(rows[0].id, created.id);
    assert.equal(rows[0].permissions, 'read,write');
    assert.deepEqual(JSON.parse(rows[0].mailboxes), ['mbx_a', 'mbx_b']);
    assert.equal(rows[0].revoked_at, null);
    assert.ok(!JSON.stringify(rows[0]).includes(created.key.slice('efk_'.length + 26 + 1)), 'the secret itself is not stored');

    const principal = await authenticate(db, created.key);
    assert.equal(principal?.workspaceId, workspaceId);
    assert.deepEqual([...principal!.permissions].sort(), ['read', 'write']);
    assert.deepEqual(principal!.mailboxes, ['mbx_a', 'mbx_b']);
  });

  it('key list prints JSON without secrets', async () => {
    assert.ok(created, 'needs the key of the previous test');
    const run = await cli(database.url, ['key', 'list', '--workspace', workspaceId]);
    assert.equal(run.code, 0, show(run));
    const keys = JSON.parse(run.stdout);
    assert.equal(keys.length, 1);
    assert.deepEqual(Object.keys(keys[0]).sort(), ['created_at', 'id', 'label', 'mailboxes', 'permissions', 'revoked_at', 'workspace_id']);
    assert.equal(keys[0].id, created.id);
    assert.equal(keys[0].workspace_id, workspaceId);
    assert.deepEqual(keys[0].permissions, ['read', 'write']);
    assert.deepEqual(keys[0].mailboxes, ['mbx_a', 'mbx_b']);
    assert.equal(keys[0].revoked_at, null);
    assert.match(keys[0].created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(!run.stdout.includes('secret'), 'no secret_sha256');
    assert.ok(!run.stdout.includes(created.key), 'not the key');
    assert.ok(!run.stdout.includes(created.key.slice('efk_'.length + 26 + 1)), 'not the secret part of the key');
  });

  it('key revoke takes effect at once on a server running on the same file: 401', async () => {
    assert.ok(created, 'needs the key of the previous tests');
    // The same TestDatabase: the server's stop() does not drop it; the suite's after() drops it once.
    let server: TestServer | undefined = await startTestServer(database);
    try {
      const before = await server.post('/v1/event_feed', {}, created.key);
      assert.equal(before.status, 200, before.text);

      const run = await cli(database.url, ['key', 'revoke', created.id]);
      assert.equal(run.code, 0, show(run));
      assert.equal(run.stdout, '');
      assert.match(run.stderr, new RegExp(`revoked ${created.id}`));

      const afterRevoke = await server.post('/v1/event_feed', {}, created.key);
      assert.equal(afterRevoke.status, 401, afterRevoke.text);
      assert.equal(afterRevoke.json.error.code, 'unauthorized');
      const row = await db('api_keys').where({ id: created.id }).first();
      assert.notEqual(row.revoked_at, null);
    } finally {
      await server?.stop();
      server = undefined;
    }
  });

  it('bad arguments: non-zero exit, a clear message on stderr, nothing on stdout, nothing written', async () => {
    assert.ok(workspaceId, 'needs the workspace of the first test');
    const keysBefore = await db('api_keys').count({ n: '*' }).first();
    const unknownKey = 'key_01M7Z2GFMXTKJ34K0R1E1X1QBB';
    const cases: Array<[string[], RegExp]> = [
      [['key', 'create', '--workspace', workspaceId, '--permissions', 'read,fly'], /permissions .*read, write, admin.*unknown: fly/],
      [['key', 'create', '--workspace', workspaceId, '--permissions', 'read', '--mailboxes', 'mbx_ok,inbox'], /mailbox ids.*invalid: inbox/],
      [['key', 'create', '--workspace', workspaceId, '--permissions', 'read', '--mailboxes', Array.from({ length: 101 }, (_, i) => `mbx_${i}`).join(',')], /at most 100 mailboxes \(got 101\)/],
      [['key', 'create', '--permissions', 'read'], /required option '--workspace <id>' not specified/],
      [['key', 'create', '--workspace', 'ws_01M7Z2GFMXTKJ34K0R1E1X1QBB', '--permissions', 'read'], /no workspace ws_01M7Z2GFMXTKJ34K0R1E1X1QBB/],
      [['key', 'revoke', unknownKey], new RegExp(`no active key ${unknownKey}`)],
      [['launch-rockets'], /unknown command 'launch-rockets'/],
    ];
    const runs = await cliAll(database.url, cases.map(([args]) => args));
    runs.forEach((run, i) => {
      const [args, message] = cases[i]!;
      assert.notEqual(run.code, 0, `${args.join(' ')}\n${show(run)}`);
      assert.equal(run.stdout, '', `${args.join(' ')}\n${show(run)}`);
      assert.match(run.stderr, message, `${args.join(' ')}\n${show(run)}`);
    });
    assert.deepEqual(await db('api_keys').count({ n: '*' }).first(), keysBefore);
  });

  it('an unreachable database: non-zero exit, one clear line on stderr, nothing on stdout, no stack trace', async () => {
    const run = await cli('postgres://root@127.0.0.1:1/none', ['workspace', 'create', '--name', 'x']);
    assert.notEqual(run.code, 0, show(run));
    assert.equal(run.stdout, '', show(run));
    assert.match(run.stderr, /event-feed: connect ECONNREFUSED/, show(run));
    assert.doesNotMatch(run.stderr, /\n\s+at /, `a stack trace: ${show(run)}`);
  });

  it('--help for the program and each command exits 0 and names the options', async () => {
    const cases: Array<[string[], string[]]> = [
      [['--help'], ['serve', 'migrate', 'demo', 'workspace', 'key', 'DATABASE_URL']],
      [['serve', '--help'], ['--seed-demo', 'HOST:PORT']],
      [['migrate', '--help'], ['apply pending database migrations']],
      [['demo', '--help'], ['seed a demo workspace']],
      [['workspace', 'create', '--help'], ['--name <name>', '--verified']],
      [['key', 'create', '--help'], ['--workspace <id>', '--permissions <list>', '--mailboxes <list>', '--label <text>']],
      [['key', 'list', '--help'], ['--workspace <id>']],
      [['key', 'revoke', '--help'], ['<key-id>']],
    ];
    const runs = await cliAll(database.url, cases.map(([args]) => args), 4);
    runs.forEach((run, i) => {
      const [args, mentions] = cases[i]!;
      assert.equal(run.code, 0, `${args.join(' ')}\n${show(run)}`);
      assert.match(run.stdout, /^Usage: event-feed/, `${args.join(' ')}\n${show(run)}`);
      for (const mention of mentions) assert.ok(run.stdout.includes(mention), `${args.join(' ')} should mention ${mention}\n${show(run)}`);
    });
  });

  describe('migrate and demo on a fresh file', () => {
    let fresh: TestDatabase;
    let freshDb: Db;
    before(async () => {
      fresh = await sqliteDatabase();
      freshDb = openDatabase(fresh.url);
    });
    after(async () => {
      await freshDb?.destroy();
      await fresh?.drop();
    });

    it('migrate on a fresh file applies the migrations and says so', async () => {
      const first = await cli(fresh.url, ['migrate']);
      assert.equal(first.code, 0, show(first));
      assert.equal(first.stdout, '');
      assert.deepEqual((await freshDb('knex_migrations').select('name').orderBy('id')).map((r) => r.name), await allMigrations());
      assert.ok(await freshDb.schema.hasTable('events'));
      // What it reports: the migration it has just applied.
      assert.equal(first.stderr.trim(), `applied: ${(await allMigrations()).join(', ')}`);
    });

    it('migrate again is idempotent: nothing applied, exit 0', async () => {
      const second = await cli(fresh.url, ['migrate']);
      assert.equal(second.code, 0, show(second));
      assert.equal(second.stdout, '');
      assert.match(second.stderr, /database is up to date/);
      assert.deepEqual((await freshDb('knex_migrations').select('name').orderBy('id')).map((r) => r.name), await allMigrations());
    });

    it('demo prints JSON with the workspace id and working keys', async () => {
      const demo = await cli(fresh.url, ['demo']);
      assert.equal(demo.code, 0, show(demo));
      const out = JSON.parse(demo.stdout);
      assert.deepEqual(Object.keys(out).sort(), ['events', 'read_key', 'workspace_id', 'write_key']);
      assert.match(out.workspace_id, /^ws_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.match(out.read_key, /^efk_/);
      assert.match(out.write_key, /^efk_/);
      const stored = await freshDb('events').where({ workspace_id: out.workspace_id }).count({ n: '*' }).first();
      assert.equal(Number(stored!.n), out.events);
      assert.equal(out.events, 300);
      const reader = await authenticate(freshDb, out.read_key);
      assert.equal(reader?.workspaceId, out.workspace_id);
      assert.deepEqual([...reader!.permissions], ['read']);
      const writer = await authenticate(freshDb, out.write_key);
      assert.equal(writer?.workspaceId, out.workspace_id);
      assert.deepEqual([...writer!.permissions].sort(), ['read', 'write']);
    });
  });
});
