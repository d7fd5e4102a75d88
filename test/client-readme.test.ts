/**
 * client/README.md as a reader follows it, against a live server: its install block in an empty
 * folder (the package as the server serves it at /client/event-feed-client.tgz, so its compiled
 * JavaScript and declarations), its `Save as` examples run with plain `node` (follow the feed, stop
 * with Ctrl-C, resume from the checkpoint; receive and verify a real webhook delivery), its
 * command `event-feed-client` as its blocks run it (listen forwarding the feed to a local receiver
 * through failures and a restart; check-receiver passing the README's receiver and failing, each on
 * exactly its rule, receivers broken in one way each), and its TypeScript example type-checked
 * strictly against the installed declarations.
 * (test/readme-commands.test.ts excuses these blocks: they are run here, in a project of their own.)
 */
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { verifyWebhook } from '../client/src/index.ts';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { shellBlocks } from './support/readme-blocks.ts';
import { typecheckConsumer } from './support/typecheck-consumer.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor, type Received } from './support/webhook-receiver.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const README = 'client/README.md';
const README_ADDRESS = 'http://127.0.0.1:3000';
const PACKAGE = join(root, 'dist/client/event-feed-client.tgz');
/** The receiver's address in the README's blocks: the test gives each receiver a free port instead. */
const RECEIVER_ADDRESS = 'http://127.0.0.1:4000/webhooks';

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
    Math.max(
      ...readdirSync(dir, { withFileTypes: true, recursive: true })
        .filter((e) => e.isFile())
        .map((e) => statSync(join(e.parentPath, e.name)).mtimeMs),
    );
  const sources = Math.max(
    newest(join(root, 'client/src')),
    statSync(join(root, 'client/package.json')).mtimeMs,
    statSync(join(root, README)).mtimeMs,
  );
  if (existsSync(PACKAGE) && statSync(PACKAGE).mtimeMs >= sources) return;
  const dir = mkdtempSync(join(tmpdir(), 'client-pack-'));
  try {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const packed = spawnSync(npm, ['pack', '--silent', '--pack-destination', dir], {
      cwd: join(root, 'client'),
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    assert.equal(packed.status, 0, 'npm pack of client/ failed');
    mkdirSync(join(root, 'dist/client'), { recursive: true });
    // Renamed into place: a server reading it meanwhile sees the old file or the new one, whole.
    renameSync(
      join(
        dir,
        readdirSync(dir).find((f) => f.endsWith('.tgz'))!,
      ),
      PACKAGE,
    );
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

function run(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string | undefined>,
): Promise<{ code: number; output: string; stdout: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout: 240_000, maxBuffer: 20 * 1024 * 1024 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr, stdout }),
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

/** How a receiver of the check-receiver test is broken, and the one rule that must catch it. */
const FAULTS = [
  { fault: 'verifies nothing', rule: 'signature-verified' },
  { fault: 'accepts stale timestamps', rule: 'timestamp-tolerance' },
  { fault: 'refuses a duplicate', rule: 'duplicates-acknowledged' },
  { fault: 'refuses an unknown type', rule: 'unknown-type-accepted' },
  { fault: 'checks only the first signature', rule: 'rotation-signatures' },
  { fault: 'takes bodies up to 16 KiB', rule: 'large-body' },
] as const;
type Fault = (typeof FAULTS)[number]['fault'] | 'none';

const KNOWN_TYPES = new Set(
  JSON.parse(readFileSync(join(root, 'schemas/event-types.json'), 'utf8')).types.map((t: { type: string }) => t.type),
);

/**
 * A receiver written by hand (no Standard Webhooks library), correct but for one fault: the kind
 * an integrator writes, and what check-receiver must tell apart.
 */
async function handWrittenReceiver(fault: Fault, secret: string) {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const seen = new Set<string>();
  const server = createHttpServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (fault === 'takes bodies up to 16 KiB' && body.length > 16 * 1024) return void res.writeHead(413).end();
    const id = req.headers['webhook-id'] as string | undefined;
    const timestamp = req.headers['webhook-timestamp'] as string | undefined;
    const signatures = ((req.headers['webhook-signature'] as string | undefined) ?? '').split(' ').filter(Boolean);
    if (fault !== 'verifies nothing') {
      if (!id || !timestamp || signatures.length === 0) return void res.writeHead(400).end();
      const expected = createHmac('sha256', key)
        .update(`${id}.${timestamp}.${body.toString('utf8')}`)
        .digest('base64');
      const candidates = (fault === 'checks only the first signature' ? signatures.slice(0, 1) : signatures).map((s) => s.split(',')[1]);
      if (!candidates.includes(expected)) return void res.writeHead(401).end();
      if (fault !== 'accepts stale timestamps' && Math.abs(Date.now() / 1000 - Number(timestamp)) > 300)
        return void res.writeHead(400).end();
    }
    const event = JSON.parse(body.toString('utf8')) as { type: string };
    if (fault === 'refuses an unknown type' && !KNOWN_TYPES.has(event.type)) return void res.writeHead(422).end();
    if (fault === 'refuses a duplicate' && id && seen.has(id)) return void res.writeHead(409).end();
    if (id) seen.add(id);
    res.writeHead(200).end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/webhooks`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** The acknowledged deliveries' webhook-ids, in the order they were acknowledged. */
const acknowledgedIds = (received: Received[], answers: number[]) =>
  received.flatMap((r, i) => (answers[i] === 200 ? [r.headers['webhook-id'] as string] : []));

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
    server = await startTestServer(await sqliteDatabase(), {
      RATE_LIMIT_PER_SECOND: '',
      WEBHOOKS_ALLOW_INSECURE: '1',
      WEBHOOK_DISPATCH_INTERVAL_MS: '100',
    });
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
    assert.deepEqual(
      codeBlocks('js').flatMap((b) => (b.saveAs ? [b.saveAs] : [])),
      ['follow.mjs', 'receiver.mjs', 'local-receiver.mjs'],
    );
    for (const command of [
      'node local-receiver.mjs',
      'npx event-feed-client listen --forward-to',
      'npx event-feed-client check-receiver --url',
    ]) {
      assert.equal(blocks.filter((b) => b.includes(command)).length, 1, command);
    }
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
    await waitFor(
      () => first.lines(eventLine).length === 33 && existsSync(join(project, 'checkpoint.txt')),
      15_000,
      `the 33 events (output: ${first.output()})`,
    );
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
    await waitFor(
      () => second.output().includes(missed.json.event.id),
      15_000,
      `the event emitted while stopped (output: ${second.output()})`,
    );
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await second.interrupt(), 0, second.output());
    assert.deepEqual(
      second.lines(eventLine).map((line) => line.split(' ')[1]),
      [missed.json.event.id],
    );
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
    await waitFor(
      () => receiver.output().includes(`verified ${emitted.json.event.id} mail.received`),
      15_000,
      `the delivery (output: ${receiver.output()})`,
    );
    const forged = await fetch(`http://127.0.0.1:${port}/hooks`, {
      method: 'POST',
      headers: {
        'webhook-id': emitted.json.event.id,
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
      },
      body: JSON.stringify(emitted.json.event),
    });
    assert.equal(forged.status, 400);
    // Its line may reach the pipe after the answer does.
    await waitFor(
      () => /refused: No matching signature found/.test(receiver.output()),
      5000,
      `the refusal's line (output: ${receiver.output()})`,
    );
    receiver.kill();
  });

  it('listen: the README block forwards the feed to a receiver through its failures, and after a kill resumes with nothing lost or repeated', async () => {
    assert.ok(project, 'installed by the previous test');
    const [block] = shell().filter((b) => b.includes('event-feed-client listen'));
    // The receiver fails the first attempt at each event emitted before the restart (500), then takes it (200).
    const attempts = new Map<string, number>();
    const answers: number[] = [];
    let failFirstAttempts = true;
    const receiver = await startReceiver((received, _n, res) => {
      const id = received.headers['webhook-id'] as string;
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      const status = failFirstAttempts && attempt === 1 ? 500 : 200;
      answers.push(status);
      res.writeHead(status).end();
    });
    children.push({ kill: () => void receiver.close() });
    const command = block!.replaceAll(RECEIVER_ADDRESS, receiver.url);
    const first = start(command, project, env);
    children.push(first);
    await waitFor(() => first.output().includes('Ctrl-C to stop'), 60_000, `listen to start (output: ${first.output()})`);
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.push((await server.post('/v1/emit_event', bounced(10 + n), writeKey)).json.event.id);
    await waitFor(() => acknowledgedIds(receiver.received, answers).length === 3, 30_000, `three deliveries (output: ${first.output()})`);
    assert.deepEqual(acknowledgedIds(receiver.received, answers), ids, 'in order');
    assert.deepEqual(
      receiver.received.map((r) => r.headers['webhook-id']),
      ids.flatMap((id) => [id, id]),
      'each failure retried in place, before the next event',
    );
    await waitFor(() => first.lines(/ 200 {2}/).length === 3, 5000, 'the lines');
    for (const id of ids) {
      assert.equal(first.lines(new RegExp(`${id}  mail\\.bounced  500  \\d+ ms  retry 1 in 500 ms$`)).length, 1, first.output());
      assert.equal(first.lines(new RegExp(`${id}  mail\\.bounced  200  \\d+ ms$`)).length, 1, first.output());
    }
    const secret = /export WEBHOOK_SECRET=(\S+)/.exec(block!)![1]!;
    for (const received of receiver.received) assert.ok(verifyWebhook(received.body, received.headers, secret));
    const statePath = join(project, '.event-feed-listen.json');
    const last = () =>
      Object.values<{ last_delivered: string | null }>(JSON.parse(readFileSync(statePath, 'utf8')).setups)[0]?.last_delivered;
    await waitFor(() => last() === ids[2], 5000, 'the saved state');
    // Killed (no Ctrl-C); two events come while it is down.
    first.kill();
    failFirstAttempts = false;
    for (let n = 0; n < 2; n++) ids.push((await server.post('/v1/emit_event', bounced(20 + n), writeKey)).json.event.id);
    const second = start(command, project, env);
    children.push(second);
    await waitFor(
      () => acknowledgedIds(receiver.received, answers).length === 5,
      60_000,
      `the events emitted meanwhile (output: ${second.output()})`,
    );
    await new Promise((r) => setTimeout(r, 500));
    // Ctrl-C reaches npx (npm exec) too, which ends as interrupted (130) whatever its command did:
    // the command's own exit status is asserted in test/client-cli.test.ts; here, its last words.
    await second.interrupt();
    assert.match(second.output(), /Stopped\. The next run resumes/);
    assert.deepEqual(acknowledgedIds(receiver.received, answers), ids, 'every event acknowledged once, none lost, none repeated');
    assert.match(second.output(), new RegExp(`The next run resumes after ${ids[4]}, the last event acknowledged`));
    assert.doesNotMatch(readFileSync(statePath, 'utf8'), new RegExp(env.READ_KEY!.slice(4)), 'no key in the state');
  });

  it("check-receiver: the README's receiver passes every rule; receivers broken in one way each fail exactly that rule", async () => {
    assert.ok(project, 'installed by the previous test');
    const [receiverBlock] = shell().filter((b) => b.includes('node local-receiver.mjs'));
    const [checkBlock] = shell().filter((b) => b.includes('event-feed-client check-receiver'));
    const secret = /export WEBHOOK_SECRET=(\S+)/.exec(checkBlock!)![1]!;
    const port = await freePort();
    const receiver = start(receiverBlock!, project, { ...env, RECEIVER_PORT: String(port) });
    children.push(receiver);
    await waitFor(() => receiver.output().includes('receiving on'), 10_000, `the receiver (output: ${receiver.output()})`);
    const check = await run(
      'bash',
      ['-euo', 'pipefail', '-c', checkBlock!.replaceAll(RECEIVER_ADDRESS, `http://127.0.0.1:${port}/webhooks`)],
      project,
      env,
    );
    assert.equal(check.code, 0, check.output);
    assert.match(check.output, /Receiver check: every rule passed \(7\)\./);
    assert.match(receiver.output(), /refused: Message timestamp too old/);
    assert.match(receiver.output(), /again evt_\w+TEST/);
    assert.match(receiver.output(), /received evt_\w+TEST\w+ mail\.opened/);
    receiver.kill();

    for (const { fault, rule } of [{ fault: 'none' as const, rule: undefined }, ...FAULTS]) {
      const broken = await handWrittenReceiver(fault, secret);
      try {
        const json = checkBlock!
          .replaceAll(RECEIVER_ADDRESS, broken.url)
          .replace('--secret "$WEBHOOK_SECRET"', '--secret "$WEBHOOK_SECRET" --json');
        const result = await run('bash', ['-c', json], project, env);
        const report = JSON.parse(result.stdout) as { passed: boolean; rules: Array<{ id: string; verdict: string; hint: string }> };
        const failed = report.rules.filter((r) => r.verdict === 'fail');
        // Not graded, and said so, rather than failed a second time for the same fault.
        const skipped = report.rules.filter((r) => r.verdict === 'skip').map((r) => r.id);
        assert.deepEqual(skipped, fault === 'verifies nothing' ? ['timestamp-tolerance'] : [], fault);
        assert.deepEqual(
          failed.map((r) => r.id),
          rule ? [rule] : [],
          `a receiver that ${fault}: ${result.output}`,
        );
        assert.equal(result.code, rule ? 1 : 0, fault);
        assert.equal(report.passed, !rule);
        if (rule) assert.ok(failed[0]!.hint.length > 40, 'a hint on how to fix it');
      } finally {
        await broken.close();
      }
    }
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
