/**
 * `event-feed serve --workers N` (src/cli/serve.ts, workers.ts), the service as it ships, on SQLite
 * and Postgres: N processes share the port, and what one worker does the others see as instances
 * do (an emit, a revocation); a worker that dies is replaced and logged; SIGTERM drains and stops
 * every process; a worker killed while connections arrive leaves no client hanging and no socket
 * behind in the primary. Every request here opens a connection of its own, which the kernel gives
 * to one worker or the other.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createKey } from '../src/auth/api-keys.ts';
import { revokeKeyEverywhere } from '../src/auth/revoke-everywhere.ts';
import { openStore } from '../src/store/open-store.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds, sqliteDatabase, type TestDatabase } from './support/databases.ts';
import { until } from './support/wait.ts';
import { provision, startProcessServer, type ProcessServer } from './support/process-server.ts';

const WORKERS = 2;

/** POST on a connection of its own (no keep-alive): whichever worker accepts it answers. */
function postOnNewConnection(
  url: string,
  path: string,
  key: string,
  body: unknown,
  timeoutMs = 30_000,
): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = request(
      `${url}${path}`,
      {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          connection: 'close',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timed out')));
    req.end(payload);
  });
}

/** The pids of the workers that said they listen, from the service's log lines. */
const listeningWorkers = (output: string): number[] =>
  output
    .split('\n')
    .filter((line) => line.includes('"msg":"worker listening"'))
    .map((line) => (JSON.parse(line) as { pid: number }).pid);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`serve --workers ${WORKERS} (${kind})`, { skip }, () => {
    let database: TestDatabase;
    let server: ProcessServer;
    let workspaceId: string;
    let keys: Record<string, string>;

    before(async () => {
      database = await create();
      ({ workspaceId, keys } = await provision(database.url, { read: { permissions: ['read'] }, write: { permissions: ['write'] } }));
      server = await startProcessServer({
        databaseUrl: database.url,
        asShipped: true,
        serveArgs: ['--workers', String(WORKERS)],
        env: { LOG_LEVEL: 'info' },
      });
      await until(`${WORKERS} workers listen`, () => listeningWorkers(server.output()).length === WORKERS, 20_000);
    });
    after(async () => {
      await server?.kill();
      for (const pid of listeningWorkers(server?.output() ?? '')) if (alive(pid)) process.kill(pid, 'SIGKILL');
      await database?.drop();
    });

    it('events emitted through every worker are read through every worker, each once, none missing', async () => {
      const emitted: string[] = [];
      const read: string[] = [];
      let cursor: string | undefined;
      const poll = async () => {
        for (;;) {
          const { status, json } = await postOnNewConnection(server.url, '/v1/event_feed', keys.read!, cursor ? { after: cursor } : {});
          assert.equal(status, 200, JSON.stringify(json));
          read.push(...(json.events as Array<{ id: string }>).map((event) => event.id));
          if (json.events.length === 0) return;
          cursor = json.next_cursor;
        }
      };
      for (let round = 0; round < 10; round++) {
        await Promise.all(
          Array.from({ length: 6 }, async (_, i) => {
            const { status, json } = await postOnNewConnection(
              server.url,
              '/v1/emit_event',
              keys.write!,
              sampleEvent('mbx_w', round * 6 + i),
            );
            assert.equal(status, 201, JSON.stringify(json));
            emitted.push(json.event.id);
          }),
        );
        // Read-your-writes through any worker: every emit answered is in the poll that follows.
        await poll();
        assert.deepEqual(new Set(read), new Set(emitted), `round ${round}`);
      }
      assert.equal(read.length, emitted.length, 'no event twice');
    });

    it('a key revoked (by another process) is refused by every worker at once', async () => {
      const store = openStore(database.url);
      try {
        const key = await createKey(store, { workspaceId, permissions: ['read'], mailboxes: null }, Date.now());
        // Each worker verifies and keeps the key first.
        for (let i = 0; i < 2 * WORKERS; i++)
          assert.equal((await postOnNewConnection(server.url, '/v1/event_feed', key.key, { limit: 1 })).status, 200);
        assert.ok(await revokeKeyEverywhere(store, key.id, Date.now()));
        for (let i = 0; i < 2 * WORKERS; i++) {
          const { status, json } = await postOnNewConnection(server.url, '/v1/event_feed', key.key, { limit: 1 });
          assert.equal(status, 401, `request ${i}: ${JSON.stringify(json)}`);
        }
      } finally {
        await store.close();
      }
    });

    it('a worker that dies is logged and replaced, and the service goes on answering', async () => {
      const [victim, other] = listeningWorkers(server.output());
      process.kill(victim!, 'SIGKILL');
      await until('a new worker listens', () => listeningWorkers(server.output()).length === WORKERS + 1, 20_000);
      assert.match(server.output(), new RegExp(`"pid":${victim},"code":null,"signal":"SIGKILL","msg":"a worker died: starting another"`));
      assert.ok(alive(other!), 'the other worker was left alone');
      for (let i = 0; i < 2 * WORKERS; i++)
        assert.equal((await postOnNewConnection(server.url, '/v1/event_feed', keys.read!, { limit: 1 })).status, 200);
    });

    it('SIGTERM drains and stops the primary and every worker', async () => {
      const workers = listeningWorkers(server.output()).filter(alive);
      assert.equal(workers.length, WORKERS);
      await server.stop(25_000);
      assert.deepEqual(await server.exited, { code: 0, signal: null });
      await until('every worker has exited', () => !workers.some(alive), 5000);
      assert.equal(server.output().match(/"msg":"shutting down"/g)?.length, WORKERS, 'each worker drained');
    });
  });
}

/** The pids of a primary's workers, from the OS (the log keeps only its last lines under load). */
const workerPids = (primary: number): number[] => {
  try {
    return execFileSync('pgrep', ['-P', String(primary)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
};

describe('serve --workers: a worker killed while connections arrive', () => {
  let database: TestDatabase;
  let server: ProcessServer;
  let keys: Record<string, string>;

  before(async () => {
    database = await sqliteDatabase();
    ({ keys } = await provision(database.url, { read: { permissions: ['read'] } }));
    server = await startProcessServer({ databaseUrl: database.url, asShipped: true, serveArgs: ['--workers', String(WORKERS)] });
    await until(`${WORKERS} workers run`, () => workerPids(server.child.pid!).length === WORKERS, 20_000);
  });
  after(async () => {
    const workers = workerPids(server?.child.pid ?? 0);
    await server?.kill();
    for (const pid of workers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await database?.drop();
  });

  it('leaves no client without an answer or a closed connection, and no socket in the primary', async () => {
    const outcomes = { answered: 0, closed: 0, hung: 0 };
    let running = true;
    const client = async () => {
      while (running) {
        const started = performance.now();
        try {
          const { status } = await postOnNewConnection(server.url, '/v1/event_feed', keys.read!, { limit: 1 }, 10_000);
          assert.equal(status, 200);
          outcomes.answered++;
        } catch (err) {
          if ((err as Error).message === 'timed out' || performance.now() - started >= 10_000) outcomes.hung++;
          else outcomes.closed++;
        }
      }
    };
    const clients = Array.from({ length: 8 }, client);
    for (let kill = 0; kill < 3; kill++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const [victim] = workerPids(server.child.pid!);
      process.kill(victim!, 'SIGKILL');
      // A worker starts in seconds, more on a loaded machine.
      await until(
        'another worker runs',
        () => {
          const pids = workerPids(server.child.pid!);
          return pids.length === WORKERS && !pids.includes(victim!);
        },
        60_000,
      );
    }
    // The replacement listens once it answers: a few more rounds through both.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    running = false;
    await Promise.all(clients);
    assert.equal(outcomes.hung, 0, `no request left hanging: ${JSON.stringify(outcomes)}`);
    assert.ok(outcomes.answered > 0, JSON.stringify(outcomes));
    // The primary holds the listening socket only: nothing accepted, nothing half-closed.
    const sockets = execFileSync('ss', ['-tanpH'], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes(`pid=${server.child.pid},`) && !line.startsWith('LISTEN'));
    assert.deepEqual(sockets, [], 'the primary keeps no connection');
  });
});

describe('serve --workers refuses a count it cannot run', () => {
  it('zero, a fraction, too many or a word: refused before anything starts', async () => {
    const { spawnSync } = await import('node:child_process');
    for (const value of ['0', '1.5', '65', 'many']) {
      const run = spawnSync(process.execPath, ['bin/event-feed.js', 'serve', '--workers', value], {
        encoding: 'utf8',
        env: { ...process.env, PORT: '0' },
        timeout: 20_000,
      });
      assert.notEqual(run.status, 0, `--workers ${value} was accepted`);
      assert.match(run.stderr, /--workers must be auto or an integer from 1 to 64/);
    }
    const env = spawnSync(process.execPath, ['bin/event-feed.js', 'serve'], {
      encoding: 'utf8',
      env: { ...process.env, PORT: '0', WORKERS: 'lots' },
      timeout: 20_000,
    });
    assert.notEqual(env.status, 0);
    assert.match(env.stderr, /WORKERS must be auto or an integer from 1 to 64/);
  });
});
