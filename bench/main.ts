/**
 * npm run bench -- [--events N] [--quick] [--db sqlite|postgres|both] [--phases a,b,…] [--out FILE]
 *                  [--profile DIR] [--no-redis] [--no-postgres] [--wait-quiet SECONDS]
 *                  [--against REF] [--noise SHARE]
 *
 * Seeds each database, starts the real server (`node bin/event-feed.js serve`) on it and runs the
 * phases of the phases table (`PHASES`; `--phases` picks some, by name) from load processes of
 * their own. `--against REF` builds REF in a scratch worktree (`prepareBase`) and runs every phase
 * that measures a server on both, interleaved, each side on its own copy of the seeded database,
 * then prints each figure's ratio to the base (`compareTable`). Prints the tables and the targets
 * (`evaluateTargets`, `longPollTargets`, `issue40Targets`) and writes bench/results.json (or
 * --out). --profile writes the server's `--cpu-prof` profiles there (read them with the
 * cpuprofile summary script). See the bench's README and METHOD pages.
 */
import { cpus, loadavg, release, totalmem } from 'node:os';
import { writeFileSync } from 'node:fs';
import { prepareBase } from './against.ts';
import { compareTable } from './compare.ts';
import {
  events,
  interruption,
  log,
  noise,
  options,
  outFile,
  quick,
  runCleanups,
  runId,
  P,
  TAIL_CLIENTS,
  TAIL_POLLS_MS,
  WRITER_RATE,
} from './config.ts';
import { INGEST_CONCURRENCY, INGEST_WORKSPACES } from './config.ts';
import { reachable } from './databases.ts';
import { issue40Table, issue40Targets } from './issue40-targets.ts';
import { longPollTable, longPollTargets } from './long-poll-phase.ts';
import { selectPhases } from './phases/index.ts';
import { machineLoad } from './processes.ts';
import { evaluateTargets, printTable } from './report.ts';
import { benchDatabase, type Base } from './run-database.ts';
import { round } from './stats.ts';

const phases = selectPhases(options.phases!);
const machine = {
  cores: cpus().length,
  cpu: cpus()[0]?.model ?? 'unknown',
  memoryGb: round(totalmem() / 2 ** 30, 1),
  node: process.version,
  kernel: release(),
  loadavgAtStart: loadavg().map((x) => round(x, 2)),
};

async function waitQuiet(seconds: number): Promise<void> {
  // On a shared machine: wait (up to this many seconds) for the other work to calm down.
  const deadline = Date.now() + seconds * 1000;
  while (machineLoad().cpuPressure > 25 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5000));
  log(`machine load now: ${JSON.stringify(machineLoad())}`);
}

async function main(): Promise<Record<string, any>> {
  log(
    `event-feed bench ${runId}: ${events.toLocaleString('en')} events${quick ? ' (quick)' : ''} on ${machine.cores} cores (${machine.cpu}), load ${machine.loadavgAtStart.join(' ')}`,
  );
  if (options['wait-quiet'] !== undefined) await waitQuiet(Number(options['wait-quiet']));
  const started = performance.now();
  const wantSqlite = options.db === 'both' || options.db === 'sqlite';
  const wantPostgres = (options.db === 'both' || options.db === 'postgres') && !options['no-postgres'];
  const redisSkip = options['no-redis'] ? 'skipped by --no-redis' : await reachable('redis');
  const postgresSkip = !wantPostgres ? 'not requested' : await reachable('postgres');
  const base: Base | undefined = options.against ? await prepareBase(options.against) : undefined;

  const results: Record<string, any> = {
    runId,
    date: new Date().toISOString(),
    quick,
    events,
    machine,
    phases: P,
    tail: { clients: TAIL_CLIENTS, pollsMs: TAIL_POLLS_MS, writerRate: WRITER_RATE },
    ingest: { concurrency: INGEST_CONCURRENCY, workspaces: INGEST_WORKSPACES },
    ...(base ? { against: { ref: base.ref, commit: base.commit, noise } } : {}),
  };
  if (wantSqlite) {
    const run = await benchDatabase('sqlite', redisSkip === undefined, phases, base);
    results.sqlite = run.current;
    if (base) results.against.sqlite = run.base;
  } else results.sqlite = { skipped: 'not requested' };
  results.redis =
    redisSkip !== undefined
      ? { skipped: redisSkip }
      : (results.sqlite.redis ?? { skipped: 'SQLite not run (the peer holds the SQLite run’s envelopes)' });
  delete results.sqlite.redis;
  if (postgresSkip !== undefined) results.postgres = { skipped: postgresSkip };
  else {
    const run = await benchDatabase('postgres', false, phases, base);
    results.postgres = run.current;
    if (base) results.against.postgres = run.base;
  }
  results.machine.loadavgAtEnd = loadavg().map((x) => round(x, 2));
  results.seconds = round((performance.now() - started) / 1000, 1);
  results.targets = [...evaluateTargets(results), ...longPollTargets(results)];
  results.issue40Targets = issue40Targets(results);
  return results;
}

const never = () => new Promise<never>(() => {});
try {
  const results = await main();
  // Interrupted: the signal's handler cleans up and exits; a run cut short writes nothing.
  if (interruption.happened) await never();
  writeFileSync(outFile, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(printTable(results));
  process.stdout.write(longPollTable(results));
  process.stdout.write(issue40Table(results.issue40Targets));
  process.stdout.write(compareTable(results, noise));
  log(`\nwrote ${outFile} in ${results.seconds} s`);
} catch (err) {
  if (interruption.happened) await never();
  await runCleanups();
  throw err;
}
await runCleanups();
process.exit(0);
