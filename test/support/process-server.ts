/**
 * The real service as a child process (`node bin/event-feed.js serve`), for tests that kill it,
 * cut its database, or need to see that the process itself survives.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shippedLaunch } from '../../bench/processes.ts';
import { createKey } from '../../src/auth/api-keys.ts';
import type { Permission } from '../../src/auth/principal.ts';
import { openStore } from '../../src/store/open-store.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A port nobody listens on right now (bound then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Migrates the database and creates a workspace with keys, on a direct connection closed afterwards. */
export async function provision(
  databaseUrl: string,
  keys: Record<string, { permissions: Permission[]; mailboxes?: string[] | null }>,
): Promise<{ workspaceId: string; keys: Record<string, string> }> {
  const store = openStore(databaseUrl);
  try {
    await store.migrate();
    const { id: workspaceId } = await store.createWorkspace('Reliability workspace', true, Date.now());
    const made: Record<string, string> = {};
    for (const [name, spec] of Object.entries(keys)) {
      made[name] = (
        await createKey(store, { workspaceId, permissions: spec.permissions, mailboxes: spec.mailboxes ?? null }, Date.now())
      ).key;
    }
    return { workspaceId, keys: made };
  } finally {
    await store.close();
  }
}

export interface ProcessServer {
  url: string;
  port: number;
  child: ChildProcess;
  /** Resolves with the exit code / signal once the process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Whether the process has exited. */
  readonly alive: boolean;
  /** stdout + stderr so far (for failure messages). */
  output(): string;
  /** SIGKILL, and wait until the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM (graceful drain), then SIGKILL after `graceMs`; waits until the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Spawns `event-feed serve` on the given database and port and waits until /healthz answers 200.
 * RATE_LIMIT_PER_SECOND=0 unless `env` says otherwise.
 */
export async function startProcessServer(options: {
  databaseUrl: string;
  port?: number;
  env?: Record<string, string>;
  readyTimeoutMs?: number;
  /** With the Node flags and environment of bin/event-feed.js's `#!` line (its heap bounds): the service as it ships. */
  asShipped?: boolean;
  /** More arguments to `serve` (`--seed-demo`). */
  serveArgs?: string[];
}): Promise<ProcessServer> {
  const port = options.port ?? (await freePort());
  const shipped = options.asShipped ? shippedLaunch() : { nodeFlags: [], env: {} };
  const child = spawn(process.execPath, [...shipped.nodeFlags, 'bin/event-feed.js', 'serve', ...(options.serveArgs ?? [])], {
    cwd: ROOT,
    env: {
      ...shipped.env,
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_SECOND: '0',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const keep = (chunk: Buffer) => {
    log += chunk.toString('utf8');
    if (log.length > 200_000) log = log.slice(-100_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let alive = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      alive = false;
      resolve({ code, signal });
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const server: ProcessServer = {
    url,
    port,
    child,
    exited,
    get alive() {
      return alive;
    },
    output: () => log,
    kill: async () => {
      if (alive) child.kill('SIGKILL');
      await exited;
    },
    stop: async (graceMs = 5000) => {
      if (!alive) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => alive && child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };

  const deadline = Date.now() + (options.readyTimeoutMs ?? 20_000);
  for (;;) {
    if (!alive) throw new Error(`event-feed serve exited before it was ready: ${JSON.stringify(await exited)}\n${log}`);
    try {
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.status === 200) return server;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await server.kill();
      throw new Error(`event-feed serve not ready after ${options.readyTimeoutMs ?? 20_000} ms\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
