/**
 * client/README.md as a reader follows it, against a live server: its install block in an empty
 * folder (the package as the server serves it at /client/event-feed-client.tgz, so its compiled
 * JavaScript and declarations), its `Save as` examples run with plain `node` (follow the feed, stop
 * with Ctrl-C, resume from the checkpoint; receive and verify a real webhook delivery), and its
 * TypeScript example type-checked strictly against the installed declarations.
 * (test/readme-commands.test.ts excuses these blocks: they are run here, in a project of their own.)
 */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { shellBlocks } from './support/readme-blocks.ts';
import { typecheckConsumer } from './support/typecheck-consumer.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { waitFor } from './support/webhook-receiver.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const README = 'client/README.md';
const README_ADDRESS = 'http://127.0.0.1:3000';
const PACKAGE = join(root, 'dist/client/event-feed-client.tgz');

/** The fenced blocks of a language, each with the file name its paragraph gives (`Save as \`x.mjs\``), if any. */
function codeBlocks(language: string): Array<{ text: string; saveAs?: string }> {
  const text = readFileSync(join(root, README), 'utf8');
  const blocks: Array<{ text: string; saveAs?: string }> = [];
  const fence = new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g');
  let previousEnd = 0;
  for (const match of text.matchAll(fence)) {
    const before = text.slice(previousEnd, match.index);
    blocks.push({ text: match[1]!, saveAs: /Save as `([\w.-]+)`/.exec(before)?.[1] });
    previousEnd = match.index! + match[0].length;
  }
  return blocks;
}

/** npm run build packs the client; a run of this file alone packs it when that is missing or older than the client's sources. */
function ensurePackage(): void {
  const newest = (dir: string): number =>
    Math.max(...readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => statSync(join(e.parentPath, e.name)).mtimeMs));
  const sources = Math.max(newest(join(root, 'client/src')), statSync(join(root, 'client/package.json')).mtimeMs, statSync(join(root, README)).mtimeMs);
  if (existsSync(PACKAGE) && statSync(PACKAGE).mtimeMs >= sources) return;
  const dir = mkdtempSync(join(tmpdir(), 'client-pack-'));
  try {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const packed = spawnSync(npm, ['pack', '--silent', '--pack-destination', dir], { cwd: join(root, 'client'), stdio: ['ignore', 'ignore', 'inherit'] });
    assert.equal(packed.status, 0, 'npm pack of client/ failed');
    mkdirSync(join(root, 'dist/client'), { recursive: true });
    // Renamed into place: a server reading it meanwhile sees the old file or the new one, whole.
    renameSync(join(dir, readdirSync(dir).find((f) => f.endsWith('.tgz'))!), PACKAGE);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The environment of a reader's shell: none of the npm_* variables `npm test` sets, plus what the README asks for. */
const readerEnv = (extra: Record<string, string>) => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('npm_') && !name.startsWith('EVENT_FEED_'))),
  npm_config_prefer_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  ...extra,
});

function run(command: string, args: string[], cwd: string, env: Record<string, string | undefined>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout: 240_000, maxBuffer: 20 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
  });
}

/** A shell block started in the background (its own process group, so Ctrl-C reaches node), with its output so far. */
function start(script: string, cwd: string, env: Record<string, string | undefined>) {
  const child: ChildProcess = spawn('bash', ['-c', script], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    output: () => output,
    lines: (pattern: RegExp) => output.split('\n').filter((line) => pattern.test(line)),
    /** Ctrl-C, as a reader stops it. */
    interrupt: async () => {
      process.kill(-child.pid!, 'SIGINT');
      return exited;
    },
    kill: () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const bounced = (n: number) => ({
  type: 'mail.bounced' as const,
  subject: { person: { email: `p${n}@laposte.net` }, refs: { mailbox_id: 'mbx_ventes', message_id: `msg_b${n}` } },
  data: {
    internet_message_id: `<b${n}@atelier.fr>`,
    recipient: `p${n}@laposte.net`,
    bounce_type: 'hard' as const,
    bounce_category: 'unknown_user' as const,
    smtp_code: 550,
    enhanced_status: '5.1.1',
    diagnostic: '550 5.1.1 user unknown',
    remote_mta: 'smtpz4.laposte.net',
  },
});

describe('client/README.md, followed by a reader', () => {
  let server: TestServer;
  let dir: string;
  let project: string;
  let env: Record<string, string | undefined>;
  let writeKey: string;
  const children: Array<{ kill(): void }> = [];
  const shell = () => shellBlocks(root, README).map((block) => block.text.replaceAll(README_ADDRESS, server.url));

  before(async () => {
    ensurePackage();
    // The service as `npm start` runs it (default rate limits), with local webhooks allowed as the README says.
    server = await startTestServer(await sqliteDatabase(), { RATE_LIMIT_PER_SECOND: '', WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '100' });
    const workspace = await server.workspace({ name: 'Lecteur du client', verified: true });
    const events = [...Array.from({ length: 30 }, (_, i) => sampleEvent('mbx_ventes', i)), bounced(1), bounced(2), bounced(3)];
    await server.db.transaction((trx) => publish(trx, workspace, events));
    writeKey = (await server.key(workspace, ['read', 'write'])).key;
    env = readerEnv({
      READ_KEY: (await server.key(workspace, ['read'])).key,
      WRITE_KEY: writeKey,
      ADMIN_KEY: (await server.key(workspace, ['read', 'write', 'admin'])).key,
      EVENT_FEED_URL: server.url,
    });
    dir = mkdtempSync(join(tmpdir(), 'client-readme-'));
  });
  after(async () => {
    for (const child of children) child.kill();
    await server?.stop();
    await server?.database.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('has the blocks this test runs', () => {
    const blocks = shellBlocks(root, README).map((b) => b.text);
    assert.ok(blocks.some((b) => b.includes('/client/event-feed-client.tgz')));
    assert.deepEqual(codeBlocks('js').flatMap((b) => (b.saveAs ? [b.saveAs] : [])), ['follow.mjs', 'receiver.mjs']);
    assert.equal(codeBlocks('ts').length, 1);
  });

  it('installs the package the server serves, into an empty project', async () => {
    const [install] = shell().filter((b) => b.includes('event-feed-client.tgz'));
    const result = await run('bash', ['-euo', 'pipefail', '-c', install!], dir, env);
    assert.equal(result.code, 0, result.output.slice(-3000));
    project = join(dir, 'feed-consumer');
    const installed = join(project, 'node_modules/@event-feed/client');
    assert.ok(existsSync(join(installed, 'dist/index.js')) && existsSync(join(installed, 'dist/index.d.ts')));
    assert.ok(existsSync(join(project, 'node_modules/openapi-fetch')) && existsSync(join(project, 'node_modules/standardwebhooks')));
    for (const block of codeBlocks('js')) if (block.saveAs) writeFileSync(join(project, block.saveAs), block.text);
  });

  it('follow.mjs: lists bounces, follows the feed live, stops on Ctrl-C, and resumes from its checkpoint without repeating', async () => {
    assert.ok(project, 'installed by the previous test');
    const [command] = shell().filter((b) => b.includes('node follow.mjs'));
    const eventLine = /^\d{4}-\d\d-\d\dT\S+ evt_\w+ mail\.\w+ /;
    const first = start(command!, project, env);
    children.push(first);
    await waitFor(() => first.lines(eventLine).length === 33 && existsSync(join(project, 'checkpoint.txt')), 15_000, `the 33 events (output: ${first.output()})`);
    assert.equal(first.lines(/^bounce /).length, 3, first.output());
    // Live: an event emitted now is printed, and its page's checkpoint stored.
    const checkpoint = readFileSync(join(project, 'checkpoint.txt'), 'utf8');
    const live = await server.post('/v1/emit_event', sampleEvent('mbx_ventes', 100), writeKey);
    await waitFor(() => first.output().includes(live.json.event.id), 10_000, 'the live event');
    await waitFor(() => readFileSync(join(project, 'checkpoint.txt'), 'utf8') !== checkpoint, 5000, 'its checkpoint');
    assert.equal(await first.interrupt(), 0, first.output());
    assert.match(first.output(), /stopped after 34 event\(s\)/);

    // Emitted while it is stopped: the next run gives it, and only it, then stops on Ctrl-C again.
    const missed = await server.post('/v1/emit_event', sampleEvent('mbx_ventes', 101), writeKey);
    const second = start(command!, project, env);
    children.push(second);
    await waitFor(() => second.output().includes(missed.json.event.id), 15_000, `the event emitted while stopped (output: ${second.output()})`);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await second.interrupt(), 0, second.output());
    assert.deepEqual(second.lines(eventLine).map((line) => line.split(' ')[1]), [missed.json.event.id]);
    assert.match(second.output(), /stopped after 1 event\(s\)/);
  });

  it('receiver.mjs: creates its endpoint, verifies a real delivery and refuses a forged one', async () => {
    assert.ok(project, 'installed by the previous test');
    const [command] = shell().filter((b) => b.includes('node receiver.mjs'));
    const port = await freePort();
    const receiver = start(command!, project, { ...env, RECEIVER_PORT: String(port) });
    children.push(receiver);
    await waitFor(() => receiver.output().includes('listening on'), 10_000, `the receiver (output: ${receiver.output()})`);
    const emitted = await server.post('/v1/emit_event', sampleEvent('mbx_ventes', 200), writeKey);
    await waitFor(() => receiver.output().includes(`verified ${emitted.json.event.id} mail.received`), 15_000, `the delivery (output: ${receiver.output()})`);
    const forged = await fetch(`http://127.0.0.1:${port}/hooks`, {
      method: 'POST',
      headers: { 'webhook-id': emitted.json.event.id, 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}` },
      body: JSON.stringify(emitted.json.event),
    });
    assert.equal(forged.status, 400);
    // Its line may reach the pipe after the answer does.
    await waitFor(() => /refused: No matching signature found/.test(receiver.output()), 5000, `the refusal's line (output: ${receiver.output()})`);
    receiver.kill();
  });

  it('the TypeScript example type-checks, strictly, against the installed declarations', async () => {
    assert.ok(project, 'installed by the previous test');
    const [example] = codeBlocks('ts');
    writeFileSync(
      join(project, 'example.mts'),
      `${example!.text}
// The declarations are the contract's types, not any: these must be refused.
for await (const e of client.events()) {
  // @ts-expect-error a bounce's smtp_code is a number: data is typed by the event's type
  if (e.type === 'mail.bounced') console.log(e.data.smtp_code satisfies string | undefined);
  // @ts-expect-error and a received mail's size_bytes too
  if (e.type === 'mail.received') console.log(e.data.size_bytes.toUpperCase());
}
// @ts-expect-error list_events has no such filter
client.listEvents({ mailbox: 'mbx_ventes' });
// @ts-expect-error emit_event's body is checked
await client.api.POST('/v1/emit_event', { body: { type: 'mail.opened' } });
`,
    );
    const result = await typecheckConsumer(project, ['example.mts'], env);
    assert.equal(result.output, '', 'tsc reports nothing');
    assert.equal(result.code, 0);
    assert.equal(result.code, 0);
  });
});
