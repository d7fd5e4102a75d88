/**
 * The command line (bin/event-feed.js → src/cli/main.ts) on a SQLite file given by DATABASE_URL.
 * Each spawn costs about a second (tsx start-up): independent invocations run a few at a time.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { authenticate, createKey, listKeys, revokeKey } from '../src/auth/api-keys.ts';
import { MAX_ACTIVE_KEYS_PER_WORKSPACE } from '../src/operations/create-key.ts';
import { sqliteDatabase, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { openStore, type OpenedStore } from '../src/store/open-store.ts';
import { migrationSource } from '../src/store/common/migrate.ts';

// The names are the same on every database kind.
const allMigrations = async () =>
  (await migrationSource('sqlite').getMigrations([])).map((m) => migrationSource('sqlite').getMigrationName(m));

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(url: string, args: string[]): Promise<Run> {
  return cliIn(ROOT, url, args);
}

/** The CLI run from `cwd`, with DATABASE_URL set to `url` or, when undefined, not set at all. */
function cliIn(cwd: string, url: string | undefined, args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: url };
  if (url === undefined) delete env.DATABASE_URL;
  delete env.EVENT_FEED_SECRET;
  delete env.NODE_OPTIONS; // the test runner's own loader options are not the CLI's business
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin/event-feed.js'), ...args], { cwd, env, timeout: 30_000 }, (err, stdout, stderr) => {
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
  let db: OpenedStore;
  let workspaceId = '';
  let created: { id: string; key: string } | undefined;

  before(async () => {
    database = await sqliteDatabase();
    db = openStore(database.url);
    await db.migrate();
  });
  after(async () => {
    await db?.close();
    await database?.drop();
  });

  it('workspace create prints exactly one line, the id', async () => {
    const run = await cli(database.url, ['workspace', 'create', '--name', '  Atelier Lumière  ']);
    assert.equal(run.code, 0, show(run));
    assert.match(run.stdout, /^ws_[0-9A-HJKMNP-TV-Z]{26}\n$/, show(run));
    workspaceId = run.stdout.trim();
    assert.deepEqual(await db.findWorkspace(workspaceId), { id: workspaceId, name: 'Atelier Lumière', verified: false });
    const counter = await db.knex('feed_counters').where({ workspace_id: workspaceId }).first();
    assert.equal(Number(counter.last_seq), 0);
  });

  it('workspace create --verified marks the workspace verified', async () => {
    const run = await cli(database.url, ['workspace', 'create', '--name', 'Verified shop', '--verified']);
    assert.equal(run.code, 0, show(run));
    assert.match(run.stdout, /^ws_[0-9A-HJKMNP-TV-Z]{26}\n$/, show(run));
    const row = await db.knex('workspaces').where({ id: run.stdout.trim() }).first();
    assert.equal(row.name, 'Verified shop');
    assert.equal(Boolean(row.verified), true);
    assert.equal(Boolean((await db.knex('workspaces').where({ id: workspaceId }).first()).verified), false);
  });

  it('key create prints the key alone on stdout, stores only its hash and the restrictions', async () => {
    assert.ok(workspaceId, 'needs the workspace of the first test');
    const run = await cli(database.url, [
      'key',
      'create',
      '--workspace',
      workspaceId,
      '--permissions',
      'read,write',
      '--mailboxes',
      'mbx_a,mbx_b',
    ]);
    assert.equal(run.code, 0, show(run));
    const match = /^(efk_([0-9A-HJKMNP-TV-Z]{26})_[A-Za-z0-9_-]{43})\n$/.exec(run.stdout);
    assert.ok(match, show(run));
    created = { id: `key_${match[2]}`, key: match[1]! };
    assert.ok(!run.stderr.includes(created.key), 'the key is not repeated on stderr');

    const rows = await db.knex('api_keys').where({ workspace_id: workspaceId });
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
      const row = await db.knex('api_keys').where({ id: created.id }).first();
      assert.notEqual(row.revoked_at, null);
    } finally {
      await server?.stop();
      server = undefined;
    }
  });

  it('key revoke accepts the key itself (efk_…), and never prints it back', async () => {
    assert.ok(workspaceId, 'needs the workspace of the first test');
    const named = await createKey(db, { workspaceId, permissions: ['read'], mailboxes: null }, Date.now());
    const secret = named.key.slice('efk_'.length + 26 + 1);
    const run = await cli(database.url, ['key', 'revoke', named.key]);
    assert.equal(run.code, 0, show(run));
    assert.equal(run.stdout, '');
    assert.match(run.stderr, new RegExp(`revoked ${named.id}`));
    assert.equal(await authenticate(db, named.key), undefined);
    const again = await cli(database.url, ['key', 'revoke', named.key]);
    assert.notEqual(again.code, 0, show(again));
    assert.match(again.stderr, new RegExp(`no active key ${named.id}`));
    const malformed = await cli(database.url, ['key', 'revoke', `efk_${named.id.slice(4)}_tooShortSecret`]);
    assert.notEqual(malformed.code, 0, show(malformed));
    assert.match(malformed.stderr, /not a well-formed key/);
    for (const out of [run, again, malformed]) {
      assert.ok(!out.stderr.includes(secret) && !out.stdout.includes(secret), 'the secret is never printed');
      assert.ok(!out.stderr.includes('tooShortSecret'), 'not even a malformed one');
    }
  });

  it('workspace list prints every workspace as JSON', async () => {
    assert.ok(workspaceId, 'needs the workspace of the first test');
    const run = await cli(database.url, ['workspace', 'list']);
    assert.equal(run.code, 0, show(run));
    const listed = JSON.parse(run.stdout);
    const stored = await db.knex('workspaces').select('id', 'name', 'verified').orderBy('id');
    assert.deepEqual(
      listed.map((w: any) => ({ id: w.id, name: w.name, verified: w.verified })),
      stored.map((w) => ({ ...w, verified: Boolean(w.verified) })),
    );
    assert.ok(listed.some((w: any) => w.id === workspaceId && w.name === 'Atelier Lumière'));
    for (const w of listed) assert.match(w.created_at, /^\d{4}-\d\d-\d\dT/);
  });

  it('--version prints the version of the package', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-V']) {
      const run = await cli(database.url, [flag]);
      assert.equal(run.code, 0, show(run));
      assert.equal(run.stdout.trim(), version);
    }
  });

  it('every command says on stderr which database it uses, never its password', async () => {
    const sqlite = await cli(database.url, ['workspace', 'list']);
    assert.match(sqlite.stderr, new RegExp(`^event-feed: database sqlite:${database.url.slice('sqlite:'.length)}\n`));
    const pg = await cli('postgres://root:hunter2@127.0.0.1:1/none?password=hunter3', ['workspace', 'list']);
    assert.notEqual(pg.code, 0);
    assert.match(pg.stderr, /^event-feed: database postgres:\/\/root:\*\*\*@127\.0\.0\.1:1\/none\n/, show(pg));
    assert.ok(!/hunter/.test(pg.stderr), show(pg));
  });

  it('run elsewhere without DATABASE_URL, or with one naming no file: refuses to create a database, and says how to choose one', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'event-feed-cli-elsewhere-'));
    try {
      const commands = [
        ['workspace', 'list'],
        ['workspace', 'create', '--name', 'x'],
        ['key', 'list', '--workspace', workspaceId],
        ['key', 'revoke', 'key_01M7Z2GFMXTKJ34K0R1E1X1QBB'],
        ['demo'],
        ['prune'],
      ];
      for (const args of commands) {
        const run = await cliIn(elsewhere, undefined, args);
        assert.notEqual(run.code, 0, `${args.join(' ')}\n${show(run)}`);
        assert.equal(run.stdout, '');
        assert.ok(run.stderr.includes(`no database at ${join(elsewhere, 'data', 'event-feed.sqlite')}`), `${args.join(' ')}\n${show(run)}`);
        assert.match(run.stderr, /DATABASE_URL is not set.*Set DATABASE_URL/s);
      }
      const typo = join(elsewhere, 'typo.sqlite');
      const run = await cliIn(elsewhere, `sqlite:${typo}`, ['workspace', 'list']);
      assert.notEqual(run.code, 0, show(run));
      assert.ok(run.stderr.includes(`no database at ${typo} (DATABASE_URL points there)`), show(run));
      assert.deepEqual(readdirSync(elsewhere), [], 'nothing was created');
      assert.ok(!existsSync(join(elsewhere, 'data')));
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('bad arguments: non-zero exit, a clear message on stderr, nothing on stdout, nothing written', async () => {
    assert.ok(workspaceId, 'needs the workspace of the first test');
    const keysBefore = await db.knex('api_keys').count({ n: '*' }).first();
    const unknownKey = 'key_01M7Z2GFMXTKJ34K0R1E1X1QBB';
    const cases: Array<[string[], RegExp]> = [
      [['key', 'create', '--workspace', workspaceId, '--permissions', 'read,fly'], /permissions .*read, write, admin.*unknown: fly/],
      [
        ['key', 'create', '--workspace', workspaceId, '--permissions', 'read', '--mailboxes', 'mbx_ok,inbox'],
        /mailbox ids.*invalid: inbox/,
      ],
      [
        [
          'key',
          'create',
          '--workspace',
          workspaceId,
          '--permissions',
          'read',
          '--mailboxes',
          Array.from({ length: 101 }, (_, i) => `mbx_${i}`).join(','),
        ],
        /at most 100 mailboxes \(got 101\)/,
      ],
      [['key', 'create', '--permissions', 'read'], /required option '--workspace <id>' not specified/],
      [
        ['key', 'create', '--workspace', 'ws_01M7Z2GFMXTKJ34K0R1E1X1QBB', '--permissions', 'read'],
        /no workspace ws_01M7Z2GFMXTKJ34K0R1E1X1QBB/,
      ],
      [['key', 'revoke', unknownKey], new RegExp(`no active key ${unknownKey}`)],
      [['launch-rockets'], /unknown command 'launch-rockets'/],
    ];
    const runs = await cliAll(
      database.url,
      cases.map(([args]) => args),
    );
    runs.forEach((run, i) => {
      const [args, message] = cases[i]!;
      assert.notEqual(run.code, 0, `${args.join(' ')}\n${show(run)}`);
      assert.equal(run.stdout, '', `${args.join(' ')}\n${show(run)}`);
      assert.match(run.stderr, message, `${args.join(' ')}\n${show(run)}`);
    });
    assert.deepEqual(await db.knex('api_keys').count({ n: '*' }).first(), keysBefore);
  });

  it('key create goes through create_key: the contract refuses a bad mailbox or label, and the per-workspace key limit holds', async () => {
    const full = await db.createWorkspace('Full of keys', false, Date.now());
    const made: string[] = [];
    for (let i = 0; i < MAX_ACTIVE_KEYS_PER_WORKSPACE; i++)
      made.push((await createKey(db, { workspaceId: full.id, permissions: ['read'], mailboxes: null }, Date.now())).id);
    const count = async () => (await listKeys(db, full.id)).filter((key) => key.revoked_at === null).length;
    const cases: Array<[string[], RegExp]> = [
      [
        ['key', 'create', '--workspace', full.id, '--permissions', 'read'],
        new RegExp(`at most ${MAX_ACTIVE_KEYS_PER_WORKSPACE} active keys: revoke one`),
      ],
      [
        ['key', 'create', '--workspace', full.id, '--permissions', 'read', '--mailboxes', `mbx_${'x'.repeat(65)}`],
        /mailbox ids.*invalid: mbx_x{65}/,
      ],
      [['key', 'create', '--workspace', full.id, '--permissions', 'read', '--label', 'x'.repeat(201)], /a label has 1 to 200 characters/],
    ];
    const runs = await cliAll(
      database.url,
      cases.map(([args]) => args),
    );
    runs.forEach((run, i) => {
      const [args, message] = cases[i]!;
      assert.notEqual(run.code, 0, `${args.join(' ')}\n${show(run)}`);
      assert.equal(run.stdout, '', `${args.join(' ')}\n${show(run)}`);
      assert.match(run.stderr, message, `${args.join(' ')}\n${show(run)}`);
    });
    assert.equal(await count(), MAX_ACTIVE_KEYS_PER_WORKSPACE, 'no key was added past the limit');
    assert.ok(await revokeKey(db, made[0]!, Date.now()));
    const room = await cli(database.url, [
      'key',
      'create',
      '--workspace',
      full.id,
      '--permissions',
      'read',
      '--label',
      'after a revocation',
    ]);
    assert.equal(room.code, 0, show(room));
    assert.equal(await count(), MAX_ACTIVE_KEYS_PER_WORKSPACE, 'one revoked, one created');
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
      [
        ['serve', '--help'],
        ['--seed-demo', 'HOST:PORT'],
      ],
      [['migrate', '--help'], ['apply pending database migrations']],
      [['demo', '--help'], ['seed a demo workspace']],
      [
        ['workspace', 'create', '--help'],
        ['--name <name>', '--verified'],
      ],
      [
        ['key', 'create', '--help'],
        ['--workspace <id>', '--permissions <list>', '--mailboxes <list>', '--label <text>'],
      ],
      [['key', 'list', '--help'], ['--workspace <id>']],
      [
        ['key', 'revoke', '--help'],
        ['<key>', 'efk_'],
      ],
      [['workspace', 'list', '--help'], ['list the workspaces']],
    ];
    const runs = await cliAll(
      database.url,
      cases.map(([args]) => args),
      4,
    );
    runs.forEach((run, i) => {
      const [args, mentions] = cases[i]!;
      assert.equal(run.code, 0, `${args.join(' ')}\n${show(run)}`);
      assert.match(run.stdout, /^Usage: event-feed/, `${args.join(' ')}\n${show(run)}`);
      for (const mention of mentions) assert.ok(run.stdout.includes(mention), `${args.join(' ')} should mention ${mention}\n${show(run)}`);
    });
  });

  describe('migrate and demo on a fresh file', () => {
    let fresh: TestDatabase;
    let freshDb: OpenedStore;
    before(async () => {
      fresh = await sqliteDatabase();
      freshDb = openStore(fresh.url);
    });
    after(async () => {
      await freshDb?.close();
      await fresh?.drop();
    });

    it('migrate on a fresh file applies the migrations and says so', async () => {
      const first = await cli(fresh.url, ['migrate']);
      assert.equal(first.code, 0, show(first));
      assert.equal(first.stdout, '');
      assert.deepEqual(
        (await freshDb.knex('knex_migrations').select('name').orderBy('id')).map((r) => r.name),
        await allMigrations(),
      );
      assert.ok(await freshDb.knex.schema.hasTable('events'));
      // What it reports: the database, then the migrations it has just applied.
      assert.equal(first.stderr.trim(), `event-feed: database ${fresh.url}\napplied: ${(await allMigrations()).join(', ')}`);
    });

    it('migrate again is idempotent: nothing applied, exit 0', async () => {
      const second = await cli(fresh.url, ['migrate']);
      assert.equal(second.code, 0, show(second));
      assert.equal(second.stdout, '');
      assert.match(second.stderr, /database is up to date/);
      assert.deepEqual(
        (await freshDb.knex('knex_migrations').select('name').orderBy('id')).map((r) => r.name),
        await allMigrations(),
      );
    });

    it('demo prints JSON with the workspace id and working keys', async () => {
      const demo = await cli(fresh.url, ['demo']);
      assert.equal(demo.code, 0, show(demo));
      const out = JSON.parse(demo.stdout);
      assert.deepEqual(Object.keys(out).sort(), ['admin_key', 'events', 'read_key', 'workspace_id', 'write_key']);
      assert.match(out.workspace_id, /^ws_[0-9A-HJKMNP-TV-Z]{26}$/);
      assert.match(out.read_key, /^efk_/);
      assert.match(out.write_key, /^efk_/);
      const stored = await freshDb.knex('events').where({ workspace_id: out.workspace_id }).count({ n: '*' }).first();
      assert.equal(Number(stored!.n), out.events);
      assert.equal(out.events, 300);
      const reader = await authenticate(freshDb, out.read_key);
      assert.equal(reader?.workspaceId, out.workspace_id);
      assert.deepEqual([...reader!.permissions], ['read']);
      const writer = await authenticate(freshDb, out.write_key);
      assert.equal(writer?.workspaceId, out.workspace_id);
      assert.deepEqual([...writer!.permissions].sort(), ['read', 'write']);
      const admin = await authenticate(freshDb, out.admin_key);
      assert.deepEqual([...admin!.permissions].sort(), ['admin', 'read', 'write']);
    });
  });
});
