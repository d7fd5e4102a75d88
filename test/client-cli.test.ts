/**
 * The client's command, event-feed-client (client/src/cli/), run from its sources against the real
 * server: `listen` sends the very bytes and headers the service's own webhooks send (compared
 * with a real endpoint's deliveries of the same events), in order, retrying in place; its state
 * resumes a run killed in the middle of a page without losing or repeating an acknowledged event;
 * Ctrl-C waits for, then aborts, the delivery in flight and says where the next run resumes; two
 * setups in one state file do not mix and the key is never written; a secret it makes is printed
 * and kept; colour only when asked. `check-receiver`: its deliveries are the contract's (valid
 * against EventEnvelope, marked as tests), and a receiver that never answers costs a bounded time.
 * Bad arguments and configuration exit with 2. (test/client-readme.test.ts runs the installed
 * package as its README says, and grades broken receivers.)
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { verifyWebhook } from '../client/src/index.ts';
import { backoffMs, MAX_BACKOFF_MS } from '../client/src/cli/listen.ts';
import { testEventId } from '../client/src/cli/receiver-rules.ts';
import { colourOn } from '../client/src/cli/terminal.ts';
import { publish } from '../src/library.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor, type Received } from './support/webhook-receiver.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const MAIN = join(root, 'client/src/cli/main.ts');
const TSX = import.meta.resolve('tsx');
const SECRET = `whsec_${Buffer.from('a local secret of 24 b.!').toString('base64')}`;
const STATE = '.event-feed-listen.json';

interface Run {
  output(): string;
  lines(pattern: RegExp): string[];
  exited: Promise<number | null>;
  signal(name: NodeJS.Signals): void;
}

/** The command, from its sources, in `cwd`, with only the variables given (and PATH). */
function cli(args: string[], cwd: string, env: Record<string, string> = {}): Run {
  const child = spawn(process.execPath, ['--import', TSX, MAIN, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    output: () => output,
    lines: (pattern) => output.split('\n').filter((line) => pattern.test(line)),
    exited,
    signal: (name) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(name);
    },
  };
}

async function finished(args: string[], cwd: string, env: Record<string, string> = {}) {
  const run = cli(args, cwd, env);
  const code = await run.exited;
  return { code, output: run.output() };
}

/** A delivery line: time, event id, type, status, latency. */
const deliveryLine = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d {2}(evt_\w+) {2}(mail\.\w+) {2}(\d{3}|--- .+?) {2}\d+(\.\d)? m?s/;
const acknowledgedIds = (received: Received[], answers: number[]) =>
  received.flatMap((r, i) => (answers[i]! >= 200 && answers[i]! < 300 ? [r.headers['webhook-id'] as string] : []));

describe('event-feed-client, from its sources', () => {
  let server: TestServer;
  let workspace: string;
  let readKey: string;
  let writeKey: string;
  let adminKey: string;
  let dir: string;
  const cleanups: Array<() => unknown> = [];
  const feedEnv = () => ({ EVENT_FEED_URL: server.url, EVENT_FEED_KEY: readKey });
  const folder = () => {
    const made = mkdtempSync(join(dir, 'run-'));
    return made;
  };
  const emit = async (n: number, change: (event: ReturnType<typeof sampleEvent>) => void = () => {}) => {
    const event = sampleEvent('mbx_ventes', n);
    change(event);
    const answer = await server.post('/v1/emit_event', event, writeKey);
    assert.ok(answer.status === 201 || answer.status === 200, answer.text);
    return answer.json.event.id as string;
  };

  before(async () => {
    server = await startTestServer(await sqliteDatabase(), { WEBHOOKS_ALLOW_INSECURE: '1', WEBHOOK_DISPATCH_INTERVAL_MS: '50' });
    workspace = await server.workspace({ name: 'Atelier', verified: true });
    readKey = (await server.key(workspace, ['read'])).key;
    writeKey = (await server.key(workspace, ['read', 'write'])).key;
    adminKey = (await server.key(workspace, ['read', 'write', 'admin'])).key;
    dir = mkdtempSync(join(tmpdir(), 'client-cli-'));
  });
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await server?.stop();
    await server?.database.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('bad arguments or configuration: a clear message and exit status 2', async () => {
    const cwd = folder();
    const listenArgs = ['listen', '--forward-to', 'http://127.0.0.1:9/hook'];
    const cases: Array<{ args: string[]; env?: Record<string, string>; says: RegExp }> = [
      { args: [], says: /a command is needed/ },
      { args: ['forward'], says: /unknown command: forward/ },
      { args: ['listen'], env: feedEnv(), says: /--forward-to .* is required/ },
      { args: ['listen', '--forward-to', 'ftp://127.0.0.1/hook'], env: feedEnv(), says: /must be an http:\/\/ or https:\/\/ address/ },
      { args: ['listen', '--forward-to', 'not a url'], env: feedEnv(), says: /is not a URL/ },
      { args: [...listenArgs, '--secret', 'hunter2'], env: feedEnv(), says: /--secret is not a signing secret/ },
      { args: [...listenArgs, '--timeout', '0'], env: feedEnv(), says: /--timeout is a number of seconds/ },
      { args: [...listenArgs, '--from', ''], env: feedEnv(), says: /--from is now, start, or a cursor/ },
      { args: [...listenArgs, '--colour'], env: feedEnv(), says: /Unknown option '--colour'/ },
      { args: [...listenArgs, 'extra'], env: feedEnv(), says: /Unexpected argument 'extra'/ },
      { args: listenArgs, env: { EVENT_FEED_KEY: readKey }, says: /EVENT_FEED_URL .* is required/ },
      { args: listenArgs, env: { EVENT_FEED_URL: server.url }, says: /EVENT_FEED_KEY is required/ },
      { args: ['check-receiver', '--url', 'http://127.0.0.1:9/hook'], says: /--secret is required/ },
      { args: ['check-receiver', '--secret', SECRET], says: /--url .* is required/ },
    ];
    for (const { args, env, says } of cases) {
      const { code, output } = await finished(args, cwd, env);
      assert.equal(code, 2, `${args.join(' ')}: ${output}`);
      assert.match(output, says, args.join(' '));
      assert.match(output, /event-feed-client --help/);
      assert.doesNotMatch(output, /\n\s+at /, `no stack trace: ${output}`);
    }
    // Refusals of the service itself: a key it does not know, a cursor it did not make.
    const unknownKey = await finished(listenArgs, cwd, {
      EVENT_FEED_URL: server.url,
      EVENT_FEED_KEY: 'efk_01M8GWYENCZ3KTPTS1A8Y5XVT7_0CXoXhJXRkh-_AY9CY3QBHsupbcBgCIG2cBJycgyCaw',
    });
    assert.equal(unknownKey.code, 2, unknownKey.output);
    assert.match(unknownKey.output, /the feed refused: unauthorized \(401\).*check EVENT_FEED_KEY/);
    assert.doesNotMatch(unknownKey.output, /0CXoXhJXRkh/, 'the key is never printed');
    const badCursor = await finished([...listenArgs, '--from', 'AAAAnotacursor', '--state', 'other.json'], cwd, feedEnv());
    assert.equal(badCursor.code, 2, badCursor.output);
    assert.match(badCursor.output, /the feed refused: invalid_argument \(400\).*--from now or --from start/);
    // A state file that is not one.
    writeFileSync(join(cwd, 'notes.json'), '{"todo": []}');
    const notState = await finished([...listenArgs, '--state', 'notes.json'], cwd, feedEnv());
    assert.equal(notState.code, 2, notState.output);
    assert.match(notState.output, /notes\.json is not a state file of event-feed-client listen/);
    assert.equal(readFileSync(join(cwd, 'notes.json'), 'utf8'), '{"todo": []}', 'left as it was');
    const help = await finished(['--help'], cwd);
    assert.equal(help.code, 0);
    assert.match(help.output, /listen --forward-to URL/);
    assert.match(help.output, /check-receiver --url URL --secret/);
  });

  it('listen sends each event with the body and headers the service webhooks send, signed with the secret', async () => {
    // The service's own endpoint, whose secret listen is given: same bytes, same signature scheme.
    const service = await startReceiver();
    const local = await startReceiver();
    cleanups.push(service.close, local.close);
    const set = await server.post('/v1/set_webhook', { url: service.url, event_types: ['mail.*'] }, adminKey);
    assert.equal(set.status, 200, set.text);
    const secret = set.json.endpoint.secret as string;
    const cwd = folder();
    const run = cli(['listen', '--forward-to', local.url, '--secret', secret], cwd, feedEnv());
    cleanups.push(() => run.signal('SIGKILL'));
    await waitFor(() => run.output().includes('Ctrl-C to stop'), 20_000, `listen to start (output: ${run.output()})`);
    // Text that JSON escapes or writes in several bytes, and numbers of every form.
    const ids = [
      await emit(1, (e) => (e.data.subject_line = 'Re: « Commande » n° 42 — "urgent" \\ </script> \u2028 ✉️ 𝄞 \u0007')),
      await emit(2, (e) => ((e.data.spam_score = 0.1), (e.data.size_bytes = 9_007_199_254_740_991))),
      await emit(3, (e) => (e.subject.person.name = 'Zoë Ünal')),
    ];
    await waitFor(
      () => local.received.length === 3 && ids.every((id) => service.received.some((r) => r.headers['webhook-id'] === id)),
      20_000,
      `both deliveries (output: ${run.output()})`,
    );
    for (const id of ids) {
      const mine = local.received.find((r) => r.headers['webhook-id'] === id)!;
      const theirs = service.received.find((r) => r.headers['webhook-id'] === id)!;
      assert.equal(mine.body, theirs.body, 'the same bytes');
      for (const name of ['content-type', 'user-agent']) assert.equal(mine.headers[name], theirs.headers[name], name);
      const standard = (headers: Received['headers']) =>
        Object.keys(headers)
          .filter((name) => name.startsWith('webhook-'))
          .sort();
      assert.deepEqual(standard(mine.headers), standard(theirs.headers));
      assert.equal(verifyWebhook(mine.body, mine.headers, secret).id, id);
      assert.match(mine.headers['webhook-signature'] as string, /^v1,[A-Za-z0-9+/]{43}=$/);
    }
    assert.deepEqual(
      local.received.map((r) => r.headers['webhook-id']),
      ids,
      'in the order of the feed',
    );
    // Its line is printed once the answer is read: it may come a moment after the receiver saw the request.
    await waitFor(() => run.lines(deliveryLine).length === 3, 5000, `the three lines (output: ${run.output()})`);
    assert.deepEqual(
      run.lines(deliveryLine).map((line) => deliveryLine.exec(line)!.slice(1, 4)),
      ids.map((id) => [id, 'mail.received', '200']),
    );
    assert.doesNotMatch(run.output(), /\u001b\[/, 'no colour in a pipe');
    run.signal('SIGINT');
    assert.equal(await run.exited, 0, run.output());
    await server.post('/v1/set_webhook', { url: service.url, remove: true }, adminKey);
  });

  it('listen retries a failure in place, in order, and a run killed in the middle of a page resumes with nothing lost or sent twice', async () => {
    const events = Array.from({ length: 8 }, (_, i) => sampleEvent('mbx_ventes', 100 + i));
    const published = await server.db.transaction((trx) => publish(trx, workspace, events));
    const ids = published.map((p) => JSON.parse(p.envelope).id as string);
    const answers: number[] = [];
    const attempts = new Map<string, number>();
    const held: ServerResponse[] = [];
    let firstRun = true;
    const receiver = await startReceiver((received, _n, res) => {
      const id = received.headers['webhook-id'] as string;
      const attempt = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, attempt);
      // First run: ids[1] fails twice (500, then 503 with Retry-After: 1); ids[4] is never answered.
      const status = firstRun && id === ids[1] && attempt <= 2 ? (attempt === 1 ? 500 : 503) : firstRun && id === ids[4] ? 0 : 204;
      answers.push(status);
      if (status === 0) held.push(res);
      else res.writeHead(status, status === 503 ? { 'retry-after': '1' } : {}).end();
    });
    cleanups.push(receiver.close);
    const cwd = folder();
    // From the oldest event: those of the tests before come first, then these.
    const first = cli(['listen', '--forward-to', receiver.url, '--secret', SECRET, '--from', 'start'], cwd, feedEnv());
    cleanups.push(() => first.signal('SIGKILL'));
    await waitFor(
      () => receiver.received.some((r) => r.headers['webhook-id'] === ids[4]),
      30_000,
      `the held delivery (output: ${first.output()})`,
    );
    const statePath = join(cwd, STATE);
    await waitFor(
      () =>
        JSON.parse(readFileSync(statePath, 'utf8')).setups &&
        Object.values<{ last_delivered: string }>(JSON.parse(readFileSync(statePath, 'utf8')).setups)[0]!.last_delivered === ids[3],
      5000,
      'the state after ids[3]',
    );
    // Failures: printed with their status and the retry, then the success; nothing after ids[1] before it.
    const lines = first.lines(deliveryLine).map((line) => deliveryLine.exec(line)!);
    const ofSecond = lines.filter((m) => m[1] === ids[1]).map((m) => m[3]);
    assert.deepEqual(ofSecond, ['500', '503', '204'], first.output());
    assert.match(first.output(), /500 {2}\d+ ms {2}retry 1 in 500 ms/);
    assert.match(first.output(), /503 {2}\d+ ms {2}retry 2 in 1\.0 s/);
    const order = receiver.received.map((r) => r.headers['webhook-id'] as string).filter((id) => ids.includes(id));
    assert.deepEqual([...new Set(order)], ids.slice(0, 5), 'each event only once the previous one was acknowledged');
    // Killed while ids[4] is in flight: no chance to save anything more.
    first.signal('SIGKILL');
    await first.exited;
    const state = readFileSync(statePath, 'utf8');
    assert.doesNotMatch(state, new RegExp(readKey.slice(4)), 'the key is never written');
    const setup = Object.values<{ delivered: string[]; key_id: string }>(JSON.parse(state).setups)[0]!;
    assert.match(setup.key_id, /^key_/);
    // Emitted while it is down: the next run gives them too.
    const later = [await emit(200), await emit(201)];
    firstRun = false;
    for (const res of held) res.destroy();
    const second = cli(['listen', '--forward-to', receiver.url, '--secret', SECRET], cwd, feedEnv());
    cleanups.push(() => second.signal('SIGKILL'));
    await waitFor(
      () => receiver.received.some((r) => r.headers['webhook-id'] === later[1]),
      30_000,
      `the second run (output: ${second.output()})`,
    );
    assert.match(second.output(), /Resuming from the saved state/);
    second.signal('SIGINT');
    assert.equal(await second.exited, 0, second.output());
    const acknowledged = acknowledgedIds(receiver.received, answers).filter((id) => ids.includes(id) || later.includes(id));
    assert.deepEqual(acknowledged, [...ids, ...later], 'every event acknowledged once, in order, across the restart');
    // ids[4] was sent twice (in flight when killed, then again): the same webhook-id, as at-least-once says.
    assert.equal(receiver.received.filter((r) => r.headers['webhook-id'] === ids[4]).length, 2);
  });

  it('Ctrl-C waits for the delivery in flight, then aborts it, and says where the next run resumes', async () => {
    const held: ServerResponse[] = [];
    let hold = false;
    const receiver = await startReceiver((_received, _n, res) => (hold ? held.push(res) : res.writeHead(200).end()));
    cleanups.push(receiver.close);
    const cwd = folder();
    const run = cli(['listen', '--forward-to', receiver.url, '--secret', SECRET], cwd, feedEnv());
    cleanups.push(() => run.signal('SIGKILL'));
    await waitFor(() => run.output().includes('Ctrl-C to stop'), 20_000, `listen to start (output: ${run.output()})`);
    const delivered = await emit(300);
    await waitFor(() => receiver.received.length === 1, 20_000, 'the first delivery');
    hold = true;
    const stuck = await emit(301);
    await waitFor(() => held.length === 1, 20_000, 'the held delivery');
    const stoppedAt = Date.now();
    run.signal('SIGINT');
    assert.equal(await run.exited, 0, run.output());
    const took = Date.now() - stoppedAt;
    assert.ok(took >= 2500 && took < 15_000, `waited for the grace, then stopped (${took} ms)`);
    assert.match(run.output(), /waiting up to 3\.0 s for the delivery in flight/);
    assert.match(run.output(), new RegExp(`${stuck} was not acknowledged: the next run sends it again \\(same webhook-id\\)`));
    assert.match(run.output(), new RegExp(`The next run resumes after ${delivered}, the last event acknowledged`));
    for (const res of held) res.destroy();

    // Idle (a held long-poll): Ctrl-C ends it at once.
    hold = false;
    const idle = cli(['listen', '--forward-to', receiver.url, '--secret', SECRET], cwd, feedEnv());
    cleanups.push(() => idle.signal('SIGKILL'));
    await waitFor(
      () => receiver.received.filter((r) => r.headers['webhook-id'] === stuck).length === 2,
      20_000,
      `the resent delivery (output: ${idle.output()})`,
    );
    await new Promise((r) => setTimeout(r, 300));
    const idleAt = Date.now();
    idle.signal('SIGTERM');
    assert.equal(await idle.exited, 0, idle.output());
    assert.ok(Date.now() - idleAt < 5000, 'stopped at once');
    assert.match(idle.output(), new RegExp(`The next run resumes after ${stuck}`));
  });

  it('two setups in one state file do not mix; a secret listen makes is printed, kept and used again', async () => {
    const a = await startReceiver();
    const b = await startReceiver();
    cleanups.push(a.close, b.close);
    const cwd = folder();
    const runA = cli(['listen', '--forward-to', a.url], cwd, feedEnv());
    cleanups.push(() => runA.signal('SIGKILL'));
    await waitFor(() => runA.output().includes('Ctrl-C to stop'), 20_000, `listen A (output: ${runA.output()})`);
    const made = /Signing with (whsec_[A-Za-z0-9+/=]+) \(made by this command/.exec(runA.output())?.[1];
    assert.ok(made, runA.output());
    const one = await emit(400);
    await waitFor(() => a.received.length === 1, 20_000, 'A gets the event');
    assert.equal(verifyWebhook(a.received[0]!.body, a.received[0]!.headers, made).id, one);
    runA.signal('SIGINT');
    assert.equal(await runA.exited, 0);

    // B starts from now: it does not take A's position, and A's next run does not take B's.
    const runB = cli(['listen', '--forward-to', b.url, '--secret', SECRET], cwd, feedEnv());
    cleanups.push(() => runB.signal('SIGKILL'));
    await waitFor(() => runB.output().includes('Ctrl-C to stop'), 20_000, `listen B (output: ${runB.output()})`);
    assert.match(runB.output(), /No saved state for this setup: starting from now/);
    const two = await emit(401);
    await waitFor(() => b.received.length === 1, 20_000, 'B gets the event');
    runB.signal('SIGINT');
    assert.equal(await runB.exited, 0);
    assert.equal(b.received[0]!.headers['webhook-id'], two);

    const againA = cli(['listen', '--forward-to', a.url], cwd, feedEnv());
    cleanups.push(() => againA.signal('SIGKILL'));
    await waitFor(() => a.received.length === 2, 20_000, `A resumes with the event it missed (output: ${againA.output()})`);
    assert.match(againA.output(), new RegExp(`Signing with ${made.replace(/[+/]/g, '\\$&')} \\(made by this command`), 'the same secret');
    await new Promise((r) => setTimeout(r, 300));
    againA.signal('SIGINT');
    assert.equal(await againA.exited, 0);
    assert.deepEqual(
      a.received.map((r) => r.headers['webhook-id']),
      [one, two],
    );
    const state = JSON.parse(readFileSync(join(cwd, STATE), 'utf8'));
    assert.equal(Object.keys(state.setups).length, 2);
    assert.doesNotMatch(JSON.stringify(state), new RegExp(readKey.slice(4)));
    assert.doesNotMatch(JSON.stringify(state), new RegExp(SECRET.slice(6).replace(/[+/]/g, '\\$&')), 'a secret given is not written');
  });

  it('colour only on a terminal or when forced, never with NO_COLOR', () => {
    assert.equal(colourOn({ isTTY: true }, {}), true);
    assert.equal(colourOn({ isTTY: false }, {}), false);
    assert.equal(colourOn({ isTTY: true }, { NO_COLOR: '1' }), false);
    assert.equal(colourOn({ isTTY: false }, { FORCE_COLOR: '1' }), true);
    assert.equal(colourOn({ isTTY: false }, { FORCE_COLOR: '1', NO_COLOR: '1' }), false);
    assert.equal(colourOn({ isTTY: true }, { NO_COLOR: '' }), true, 'an empty NO_COLOR is unset');
  });

  it('backs off doubling from 500 ms, capped, honouring a Retry-After up to the cap', () => {
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => backoffMs(n)),
      [500, 1000, 2000, 4000],
    );
    assert.equal(backoffMs(30), MAX_BACKOFF_MS);
    assert.equal(backoffMs(1, 5), 5000);
    assert.equal(backoffMs(1, 3600), MAX_BACKOFF_MS);
  });

  it("check-receiver: its deliveries are the contract's events, marked as tests; a receiver that never answers costs a bounded time", async () => {
    for (let i = 0; i < 20; i++) assert.equal(contractErrors('EventId', testEventId()), null);
    assert.match(testEventId(), /^evt_\w{10}TEST\w{12}$/);
    const receiver = await startReceiver((_r, _n, res) => void res.writeHead(204).end());
    cleanups.push(receiver.close);
    const cwd = folder();
    const { code, output } = await finished(['check-receiver', '--url', receiver.url, '--secret', SECRET, '--json'], cwd);
    const report = JSON.parse(output);
    // Acknowledges everything: the forgeries too.
    assert.equal(code, 1);
    assert.deepEqual(
      report.rules.filter((r: { verdict: string }) => r.verdict === 'fail').map((r: { id: string }) => r.id),
      ['signature-verified'],
    );
    for (const received of receiver.received) {
      assert.equal(received.headers['event-feed-test'], 'true');
      assert.equal(received.headers['user-agent'], 'event-feed-webhooks/1');
      assert.equal(received.headers['content-type'], 'application/json');
    }
    const valid = receiver.received.filter((r) => {
      try {
        verifyWebhook(r.body, r.headers, SECRET);
        return true;
      } catch {
        return false;
      }
    });
    const types = new Set<string>();
    for (const received of valid) {
      const event = JSON.parse(received.body);
      assert.match(event.subject.refs.message_id, /^msg_test_/);
      if (event.type === 'mail.opened') continue; // the unknown type, on purpose
      types.add(event.type);
      assert.equal(contractErrors('EventEnvelope', event), null, `a valid ${event.type}`);
    }
    const contractTypes = JSON.parse(readFileSync(join(root, 'schemas/event-types.json'), 'utf8')).types.map(
      (t: { type: string }) => t.type,
    );
    assert.deepEqual([...types].sort(), [...contractTypes].sort(), 'every type of the contract');
    assert.ok(
      valid.some((r) => Buffer.byteLength(r.body) > 64 * 1024),
      'a body over 64 KiB',
    );

    // A receiver that takes the connection and never answers: each delivery times out; the rest is not graded.
    const silent = await startReceiver(() => {});
    cleanups.push(silent.close);
    const startedAt = Date.now();
    const slow = await finished(['check-receiver', '--url', silent.url, '--secret', SECRET, '--timeout', '0.5'], cwd);
    assert.equal(slow.code, 1, slow.output);
    assert.ok(Date.now() - startedAt < 20_000, 'bounded');
    assert.match(slow.output, /FAIL {2}valid-deliveries: .*\n.*no answer \(timed out after 0\.5 s\)/);
    assert.equal(slow.output.match(/SKIP {2}/g)?.length, 6, slow.output);
    assert.match(slow.output, /Receiver check: FAILED: 1 rule\(s\) failed, 0 passed, 6 skipped/);
  });
});
