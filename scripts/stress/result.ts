import { violations, type CheckResult } from './check.ts';
import type { ReaderResult } from './model.ts';
import type { WriterStats } from './writer.ts';

export interface RunResult extends CheckResult {
  label: string;
  backend: 'postgres' | 'sqlite';
  store: string;
  /** The negative control: expected to lose events. */
  control: boolean;
  writers: number;
  workspaces: number;
  readers: number;
  /** Length of the write phase. */
  seconds: number;
  /** Writer connections terminated (Postgres) or writer processes SIGKILLed (SQLite). */
  kills: number;
  /** Of those, fired as the writer was sending COMMIT. */
  commitKills: number;
  /** Reader connections terminated (Postgres). */
  readerKills: number;
  /** Writer sockets closed by the client around COMMIT (Postgres). */
  cuts: number;
  retries: number;
  failures: Record<string, number>;
  readerPages: number;
  readerRestarts: number;
  redelivered: number;
  readerErrors: number;
  verdict: 'PASS' | 'FAIL';
  reason: string;
  wallMs: number;
}

export function finish(
  base: Omit<
    RunResult,
    keyof CheckResult | 'verdict' | 'reason' | 'readerPages' | 'readerRestarts' | 'redelivered' | 'readerErrors' | 'retries' | 'failures'
  >,
  checked: CheckResult,
  readers: ReaderResult[],
  writers: WriterStats[],
): RunResult {
  const failures: Record<string, number> = {};
  for (const w of writers) for (const [k, n] of Object.entries(w.failures)) failures[k] = (failures[k] ?? 0) + n;
  const result: RunResult = {
    ...base,
    ...checked,
    retries: writers.reduce((n, w) => n + w.retries, 0),
    failures,
    readerPages: readers.reduce((n, r) => n + r.pages, 0),
    readerRestarts: readers.reduce((n, r) => n + r.restarts, 0),
    redelivered: readers.reduce((n, r) => n + r.redelivered, 0),
    readerErrors: readers.reduce((n, r) => n + r.errors, 0),
    verdict: 'FAIL',
    reason: '',
  };
  const bad = violations(checked);
  if (result.control) {
    result.verdict = checked.lost > 0 ? 'PASS' : 'FAIL';
    result.reason =
      checked.lost > 0
        ? `control lost ${checked.lost} of ${checked.owed} deliveries owed to its ${result.readers} readers (${((100 * checked.lost) / Math.max(1, checked.owed)).toFixed(1)}%), as it must`
        : 'negative control did NOT lose events: the harness failed to provoke the bug';
  } else if (checked.committedTxns === 0) {
    result.reason = 'nothing committed';
  } else {
    result.verdict = bad === 0 ? 'PASS' : 'FAIL';
    result.reason = bad === 0 ? 'no loss, duplicate, reorder, partial, phantom, hole or disagreement' : `${bad} violations`;
  }
  return result;
}

const COLUMNS: Array<[string, (r: RunResult) => string | number]> = [
  ['scenario', (r) => r.label],
  ['store', (r) => (r.control ? 'naive' : 'real')],
  ['writers', (r) => r.writers],
  ['ws', (r) => r.workspaces],
  ['secs', (r) => r.seconds.toFixed(1)],
  ['events', (r) => r.events],
  ['txns', (r) => r.txns],
  ['commit', (r) => r.committedTxns],
  ['rollbk', (r) => r.rollbacks],
  ['failed', (r) => r.failed],
  ['kills', (r) => `${r.kills}${r.commitKills ? `(${r.commitKills}c)` : ''}${r.readerKills ? `+${r.readerKills}r` : ''}`],
  ['cuts', (r) => r.cuts],
  ['unknown(p/a)', (r) => `${r.unknown}(${r.unknownPresent}/${r.unknownAbsent})`],
  ['lost', (r) => r.lost],
  ['dup', (r) => r.duplicated],
  ['reord', (r) => r.reordered],
  ['partial', (r) => r.partial],
  ['phantom', (r) => r.phantom],
  ['holes', (r) => r.holes],
  ['disagr', (r) => r.disagree],
  ['verdict', (r) => (r.control ? `${r.verdict} (must lose)` : r.verdict)],
];

export function table(results: RunResult[]): string {
  const rows = [COLUMNS.map(([h]) => h), ...results.map((r) => COLUMNS.map(([, f]) => String(f(r))))];
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function details(r: RunResult): string {
  const lines = [
    `${r.label} [${r.store}]: ${r.verdict}: ${r.reason} (${(r.wallMs / 1000).toFixed(1)} s wall)`,
    `  readers ${r.readers}: ${r.readerPages} pages, ${r.readerRestarts} crash-restarts from saved cursors (${r.redelivered} events dropped and re-read), ${r.readerErrors} read errors` +
      (r.retries ? `; writer retries ${r.retries}` : ''),
  ];
  const failures = Object.entries(r.failures)
    .map(([k, n]) => `${k}×${n}`)
    .join(', ');
  if (failures) lines.push(`  failed-before-commit causes: ${failures}`);
  for (const s of r.samples.slice(0, r.control ? 3 : 25)) lines.push(`  ! ${s}`);
  return lines.join('\n');
}
