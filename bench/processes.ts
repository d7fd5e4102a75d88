/** The server under test and the load processes, each a child process of the orchestrator. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freshBuild } from '../bin/fresh-build.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

let compiled: boolean | undefined;

/**
 * Node's arguments to run bench/<file> in a process of its own: its compiled copy in dist/bench
 * (`npm run bench` builds first) while that build is newer than every source it could include,
 * else the source through tsx, whose start-up costs ~1 s more per process (a dozen per database).
 */
function scriptArgs(file: string): string[] {
  compiled ??=
    freshBuild(ROOT) &&
    readdirSync(join(ROOT, 'bench')).every(
      (name) => !name.endsWith('.ts') || statSync(join(ROOT, 'bench', name)).mtimeMs <= statSync(join(ROOT, 'dist', 'BUILT')).mtimeMs,
    );
  return compiled ? [join(ROOT, 'dist', 'bench', file.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', join(ROOT, 'bench', file)];
}

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

/** VmRSS and VmHWM of a process, in MB (undefined once it is gone). */
export function memoryOf(pid: number): { rssMb: number; hwmMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

export interface MemorySeries {
  samples: Array<{ t: number; rssMb: number }>;
  stop(): MemoryPhase;
}

export interface MemoryPhase {
  startMb: number;
  peakMb: number;
  endMb: number;
  /** Peak of the last quarter of the phase minus peak of the first quarter: growth while it ran. */
  growthMb: number;
  /** RSS at each tenth of the phase, to show it flat (or not). */
  profileMb: number[];
  samples: number;
}

/** Polls /proc/<pid>/status every `everyMs` until stopped. */
export function sampleMemory(pid: number, everyMs = 50): MemorySeries {
  const samples: Array<{ t: number; rssMb: number }> = [];
  const take = () => {
    const m = memoryOf(pid);
    if (m) samples.push({ t: performance.now(), rssMb: m.rssMb });
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    samples,
    stop() {
      clearInterval(timer);
      take();
      const rss = samples.map((s) => s.rssMb);
      const q = Math.max(1, Math.floor(rss.length / 4));
      const r1 = (x: number) => Math.round(x * 10) / 10;
      return {
        startMb: r1(rss[0]!),
        peakMb: r1(Math.max(...rss)),
        endMb: r1(rss.at(-1)!),
        growthMb: r1(Math.max(...rss.slice(-q)) - Math.max(...rss.slice(0, q))),
        profileMb: Array.from({ length: 11 }, (_, i) => r1(rss[Math.min(rss.length - 1, Math.round((i / 10) * (rss.length - 1)))]!)),
        samples: rss.length,
      };
    },
  };
}

export interface ServerProcess {
  url: string;
  pid: number;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** The Node flags and environment of bin/event-feed.js's `#!` line: the service is measured as it ships. */
export function shippedLaunch(root: string = ROOT): { nodeFlags: string[]; env: Record<string, string> } {
  const words = readFileSync(join(root, 'bin', 'event-feed.js'), 'utf8')
    .split('\n', 1)[0]!
    .split(/\s+/);
  const assignments = words.filter((word) => /^[A-Z_]+=/.test(word)).map((word) => word.split('=', 2) as [string, string]);
  return { nodeFlags: words.filter((word) => word.startsWith('--')), env: Object.fromEntries(assignments) };
}

/**
 * `node <the bin's flags> bin/event-feed.js serve` with the environment its `#!` line sets, on
 * `databaseUrl`, rate limiting off, warn-level logs; waits for /healthz. SERVER_NODE_ARGS
 * (space-separated) replaces the bin's flags, to try others; the caller's environment wins, and
 * `options.env` over it.
 */
export async function startServer(
  databaseUrl: string,
  options: { cpuProfileDir?: string; root?: string; env?: Record<string, string> } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const root = options.root ?? ROOT;
  const shipped = shippedLaunch(root);
  const nodeFlags =
    process.env.SERVER_NODE_ARGS !== undefined ? process.env.SERVER_NODE_ARGS.split(' ').filter(Boolean) : shipped.nodeFlags;
  const args = [
    ...nodeFlags,
    ...(options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] : []),
    'bin/event-feed.js',
    'serve',
  ];
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...shipped.env,
      ...process.env,
      DATABASE_URL: databaseUrl,
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
    if (log.length > 100_000) log = log.slice(-50_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let alive = true;
  const exited = new Promise<void>((resolve) => child.once('exit', () => ((alive = false), resolve())));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (!alive) throw new Error(`event-feed serve exited before it was ready:\n${log}`);
    try {
      const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`event-feed serve not ready after 30 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    pid: child.pid!,
    child,
    output: () => log,
    async stop() {
      if (!alive) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => alive && child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a load process (`bench/<file>` with its config as JSON) and returns the JSON line it prints. */
export async function runClient<T>(
  file: string,
  config: Record<string, unknown>,
  options: { onStart?: (child: ChildProcess) => void } = {},
): Promise<T> {
  const child = spawn(process.execPath, [...scriptArgs(file), JSON.stringify(config)], {
    cwd: ROOT,
    stdio: [options.onStart ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  options.onStart?.(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${file} ${String(config.mode)} exited with ${code}:\n${err.slice(-4000)}`);
  const last = out.trim().split('\n').at(-1)!;
  return JSON.parse(last) as T;
}

/** A process's name and the CPU seconds (user, system) it has used so far, from /proc/<pid>/stat. */
function statOf(pid: number | string): { name: string; user: number; sys: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[11] and fields[12] are utime and stime (the 14th and 15th of the whole line), in clock ticks.
  return {
    name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    user: Number(fields[11]) / CLOCK_TICKS,
    sys: Number(fields[12]) / CLOCK_TICKS,
  };
}
const CLOCK_TICKS = 100;

/** The pids of a process's live children (every thread's), from /proc. */
function childrenOf(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/** A process and its descendants now (a `serve --workers` primary and its workers). */
export function processTree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap(processTree)];
}

/**
 * CPU seconds used so far by a process and its live descendants (a primary and its workers).
 * A worker that exits takes its share with it: compare readings taken while the same processes live.
 */
export function treeCpuSecondsOf(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + cpuSecondsOf(p), 0);
}

/** VmRSS of a process and its live descendants, in MB. */
export function treeRssMbOf(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + (memoryOf(p)?.rssMb ?? 0), 0);
}

/** CPU seconds (user + system) a process has used so far; NaN once it is gone. */
export function cpuSecondsOf(pid: number): number {
  try {
    const { user, sys } = statOf(pid);
    return user + sys;
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds used so far by every process named `name` on this machine (e.g. the local Postgres
 * server's backends); NaN when there is none. A process that ends between two readings takes its
 * share with it: compare readings taken while the same processes live.
 */
export function cpuSecondsOfAll(name: string): number {
  let total = 0;
  let found = false;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = statOf(entry);
      if (stat.name !== name) continue;
      total += stat.user + stat.sys;
      found = true;
    } catch {
      // gone meanwhile
    }
  }
  return found ? total : NaN;
}

/** How busy the machine is: CPU pressure (share of time some runnable task waited for a CPU, %) and load average. */
export function machineLoad(): { cpuPressure: number; loadavg1: number } {
  let cpuPressure = NaN;
  try {
    cpuPressure = Number(/some avg10=([\d.]+)/.exec(readFileSync('/proc/pressure/cpu', 'utf8'))?.[1]);
  } catch {
    // no PSI on this kernel
  }
  return { cpuPressure, loadavg1: Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]) };
}

/** Samples machineLoad() every few seconds; stop() gives the means (what else ran while we measured). */
export function sampleLoad(everyMs = 2000) {
  const samples: Array<{ cpuPressure: number; loadavg1: number }> = [machineLoad()];
  const timer = setInterval(() => samples.push(machineLoad()), everyMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      samples.push(machineLoad());
      const mean = (f: (s: (typeof samples)[number]) => number) =>
        Math.round((samples.reduce((a, s) => a + f(s), 0) / samples.length) * 10) / 10;
      return {
        cpuPressureMean: mean((s) => s.cpuPressure),
        loadavg1Mean: mean((s) => s.loadavg1),
        cpuPressureMax: Math.max(...samples.map((s) => s.cpuPressure)),
      };
    },
  };
}

/**
 * A floor server (bench/floor-server.ts, bench/tail-floor-server.ts) in its own process, on Node's
 * defaults (a floor owes the service's heap bounds nothing); resolves with its URL and a stop function.
 */
export async function startFloorServer(script: string, config: object): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...scriptArgs(script), JSON.stringify(config)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`floor server exited with ${code}`)));
    child.stdout!.once('data', (c: Buffer) => resolve(Number(c.toString('utf8').trim())));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
