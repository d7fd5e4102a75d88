/**
 * npm run stress -- [--seconds 20] [--writers 16] [--readers 4] [--workspaces N | --scenario all|1|4|100]
 *                   [--naive] [--sqlite] [--no-kills] [--json]
 *
 * Default: the real store (src/) on Postgres with 1, 4 and 100 workspaces, then the naive negative
 * control (4 workspaces), each with 16 writers and 4 full + 4 restricted readers.
 * Time: --seconds is the budget of the whole command, split evenly among its runs; each run writes
 * for its share minus 1 s (what setup, settling, draining and checking take), at least 1 s.
 * Default 20 s: 4 runs × (4 s of writes + ~1 s) ≈ 20–21 s.
 * --naive: only the negative control. --sqlite: the real store on SQLite with writer and reader
 * processes (4 writer processes unless --writers; readers spread over 2 processes; startup of the
 * processes adds ~2 s per run on 2 cores).
 * --json: print the results as JSON on stdout instead of the table.
 * Exit 1 when a real-store run finds any violation or the negative control loses nothing.
 */
import { parseArgs } from 'node:util';
import { naiveStore } from './naive-store.ts';
import { runPostgres } from './postgres.ts';
import { realStore } from './real-store.ts';
import { details, table, type RunResult } from './result.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    writers: { type: 'string' },
    readers: { type: 'string' },
    workspaces: { type: 'string' },
    scenario: { type: 'string', default: 'all' },
    naive: { type: 'boolean', default: false },
    sqlite: { type: 'boolean', default: false },
    'no-kills': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});

const num = (v: string | undefined, name: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number (got ${v})`);
  return n;
};
const seconds = num(values.seconds, 'seconds');
// Full readers, and as many restricted ones (default 4 + 4 on Postgres, 2 + 2 on SQLite).
const readers = Math.floor(num(values.readers ?? (values.sqlite ? '2' : '4'), 'readers'));
const kills = !values['no-kills'];
let scenarios: number[];
if (values.workspaces !== undefined) scenarios = [Math.floor(num(values.workspaces, 'workspaces'))];
else if (values.scenario === 'all') scenarios = [1, 4, 100];
else if (['1', '4', '100'].includes(values.scenario!)) scenarios = [Number(values.scenario)];
else throw new Error('--scenario must be all, 1, 4 or 100');

const writeSeconds = (runs: number) => Math.max(1, seconds / runs - 1);
const log = (msg: string) => process.stderr.write(`${msg}\n`);
const results: RunResult[] = [];

if (values.sqlite) {
  const { runSqlite } = await import('./sqlite.ts');
  const writers = values.writers === undefined ? 4 : Math.floor(num(values.writers, 'writers'));
  const each = writeSeconds(scenarios.length);
  for (const ws of scenarios) {
    log(`sqlite: ${writers} writer processes, ${ws} workspace(s), ${each.toFixed(1)} s…`);
    results.push(
      await runSqlite({
        label: `sqlite-${ws}ws`,
        seconds: each,
        writerProcesses: writers,
        workspaces: ws,
        fullReaders: readers,
        restrictedReaders: readers,
        kills,
      }),
    );
  }
} else {
  const writers = values.writers === undefined ? 16 : Math.floor(num(values.writers, 'writers'));
  // The control runs on 4 workspaces unless one scenario was picked.
  const controlWs = scenarios.length === 1 ? scenarios[0]! : 4;
  const control = { label: `naive-${controlWs}ws`, ws: controlWs, control: true };
  const runs: Array<{ label: string; ws: number; control: boolean }> = values.naive
    ? [control]
    : [...scenarios.map((ws) => ({ label: `pg-${ws}ws`, ws, control: false })), control];
  const each = writeSeconds(runs.length);
  for (const run of runs) {
    log(`postgres ${run.control ? 'NAIVE CONTROL' : 'real store'}: ${writers} writers, ${run.ws} workspace(s), ${each.toFixed(1)} s…`);
    results.push(
      await runPostgres({
        label: run.label,
        store: run.control ? naiveStore : realStore,
        control: run.control,
        seconds: each,
        writers,
        workspaces: run.ws,
        fullReaders: readers,
        restrictedReaders: readers,
        kills,
      }),
    );
  }
}

if (values.json) {
  process.stdout.write(`${JSON.stringify(results)}\n`);
} else {
  console.log(`\n${table(results)}\n`);
  console.log(
    values.sqlite
      ? 'kills: writer processes SIGKILLed (each leaves its in-flight transaction UNKNOWN); unknown(p/a): resolved in the database as present whole / absent whole.'
      : 'kills: pg_terminate_backend of writer backends (c: fired as COMMIT was sent; +r: of reader backends); cuts: writer sockets closed around COMMIT;\n' +
          'unknown(p/a): transactions that got an error after sending COMMIT, resolved in the database as present whole / absent whole.',
  );
  console.log(
    'phantom: rolled-back, failed or foreign events stored or delivered; holes: seq gaps or feed_counters off; disagr: readers or cursors disagreeing on a position.\n',
  );
  for (const r of results) console.log(details(r));
}
const failed = results.filter((r) => r.verdict === 'FAIL');
if (failed.length) log(`\nFAIL: ${failed.map((r) => r.label).join(', ')}`);
process.exitCode = failed.length ? 1 : 0;
