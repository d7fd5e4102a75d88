/**
 * The bench's command line, sizes and shared state (the log, the cleanups run on exit or Ctrl-C).
 * Parsed once, when the orchestrator first imports it.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from './processes.ts';

export const { values: options } = parseArgs({
  options: {
    events: { type: 'string' },
    quick: { type: 'boolean', default: false },
    db: { type: 'string', default: 'both' },
    out: { type: 'string' },
    profile: { type: 'string' },
    'no-redis': { type: 'boolean', default: false },
    'no-postgres': { type: 'boolean', default: false },
    'wait-quiet': { type: 'string' },
    phases: { type: 'string', default: 'all' },
    against: { type: 'string' },
    noise: { type: 'string', default: '0.1' },
  },
});

export const quick = options.quick!;
export const events = options.events !== undefined ? Number(options.events) : quick ? 20_000 : 1_000_000;
if (!Number.isInteger(events) || events < 1000) throw new Error('--events must be an integer ≥ 1000');
/** A figure worse than the base's by more than this share is marked (`--noise`, default 0.1). */
export const noise = Number(options.noise);
if (!(noise >= 0 && noise < 1)) throw new Error('--noise must be a share between 0 and 1, e.g. 0.1');
export const outFile = options.out ?? join(ROOT, 'bench', 'results.json');
export const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;

// Phase sizes: the full run takes 7-11 minutes at 1M events here; --quick under a minute (see the README's commands).
export const P = quick
  ? {
      replayRuns: 1,
      warmupPages: 3,
      depthRounds: 40,
      sparseRounds: 20,
      mcpRounds: 40,
      tailSeconds: 1,
      tailDrain: 1,
      ingestSeconds: 1,
      ingestWarmup: 0.5,
      fanoutSeconds: 1,
      fanoutWarmup: 0.5,
    }
  : {
      replayRuns: 3,
      warmupPages: 20,
      depthRounds: 300,
      sparseRounds: 60,
      mcpRounds: 300,
      tailSeconds: 30,
      tailDrain: 2,
      ingestSeconds: 10,
      ingestWarmup: 2,
      fanoutSeconds: 15,
      fanoutWarmup: 2,
    };
export const TAIL_CLIENTS = 200;
// Each tailing client polls again this long after an answer that was not a full page. At 100 ms
// about half the answers are "nothing new" (the writer's 500 events/s are spread over 100 feeds):
// the target's load. Once a second is how feed consumers usually poll: reported alongside.
export const TAIL_POLLS_MS = [100, 1000];
export const WRITER_RATE = 500;
export const INGEST_CONCURRENCY = 16;
export const INGEST_WORKSPACES = 100;
// The workers phase: `serve --workers N` for each N, fan-out replay by this many readers, then tailing as above.
export const WORKER_COUNTS = [1, 2];
export const FANOUT_READERS = 8;

export const log = (line: string) => process.stderr.write(`${line}\n`);

/** Run in reverse order at exit or on a signal; each must tolerate running twice. */
export const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | undefined;
/** Runs the cleanups once, whoever asks first (the end of the run or a signal); later callers wait for the same. */
export function runCleanups(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length > 0) await cleanups.pop()!().catch(() => {});
  })();
  return cleaning;
}
/** Set by Ctrl-C (or SIGTERM): what is still running then fails, and no result is written. */
export const interruption = { happened: false };
const onSignal = async () => {
  interruption.happened = true;
  log('interrupted: cleaning up');
  await runCleanups();
  process.exit(130);
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
