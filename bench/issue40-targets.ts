/**
 * Issue 40's targets, judged on one run's results, on both databases: the cost of a page beyond
 * reading it, replay and fan-out against their floors, polls of one workspace woken together,
 * restricted keys, MCP, and ingestion against the base of `--against` (not judged without one).
 */
import type { Target } from './report.ts';

const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);
const fmt = (x: number | undefined, digits = 2) =>
  x === undefined ? 'n/a' : x.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ratio = (a: unknown, b: unknown) => (num(a) !== undefined && num(b) ? (a as number) / (b as number) : undefined);

function judged(name: string, target: string, value: number | undefined, ok: (v: number) => boolean, note = ''): Target {
  return { name, target, value: value === undefined ? 'n/a' : `${fmt(value)}${note}`, met: value === undefined ? null : ok(value) };
}

function pollsTarget(label: string, d: any, polls: number): Target {
  const pair = d.longpoll?.oneWorkspace?.[`polls${polls}`];
  const name = `${label} ${polls.toLocaleString('en')} polls of one workspace woken: p50, p99 ÷ floor`;
  if (!pair) return { name, target: '≤ 1.5 each', value: 'n/a', met: null };
  const q = (which: 'p50' | 'p99') => pair.service.latencyMs[which] / Math.max(pair.floor.latencyMs[which], 0.01);
  return { name, target: '≤ 1.5 each', value: `${fmt(q('p50'))}, ${fmt(q('p99'))}`, met: q('p50') <= 1.5 && q('p99') <= 1.5 };
}

export function issue40Targets(r: any): Target[] {
  const out: Target[] = [];
  for (const [label, kind] of [
    ['SQLite', 'sqlite'],
    ['Postgres', 'postgres'],
  ] as const) {
    const d = r[kind] ?? {};
    if (d.skipped) continue;
    // The in-process read of the same page: the ceiling's wall time per page of 500.
    const readPageMs = num(d.ceiling?.eventsPerSecond) ? 500_000 / d.ceiling.eventsPerSecond : undefined;
    out.push(
      judged(
        `${label} server CPU per page of 500 ÷ in-process readPage`,
        '≤ 1.5',
        ratio(d.replay?.serverCpuMsPerPage, readPageMs),
        (v) => v <= 1.5,
        readPageMs === undefined ? '' : ` (${fmt(d.replay.serverCpuMsPerPage)} / ${fmt(readPageMs)} ms)`,
      ),
      judged(`${label} replay ÷ floor`, '≥ 0.9', ratio(d.replay?.eventsPerSecond, d.replayFloor?.eventsPerSecond), (v) => v >= 0.9),
      judged(
        `${label} fan-out of 8 ÷ floor`,
        '≥ 0.8',
        ratio(d.workers?.['1']?.fanout?.eventsPerSecond, d.workers?.floor?.fanout?.eventsPerSecond),
        (v) => v >= 0.8,
      ),
      pollsTarget(label, d, 200),
      pollsTarget(label, d, 1000),
    );
    const scopes = Object.values<any>(d.sparse?.scopes ?? {}).map((s) => num(s.ratio));
    const worst = scopes.length && scopes.every((x) => x !== undefined) ? Math.max(...(scopes as number[])) : undefined;
    out.push(
      judged(`${label} restricted key (worst of 1, 10, 50 mailboxes) ÷ unrestricted`, '≤ 1.5', worst, (v) => v <= 1.5),
      judged(`${label} MCP page ÷ HTTP page`, '≤ 1.25', num(d.mcp?.ratio), (v) => v <= 1.25),
    );
    const base = r.against?.[kind];
    const name = `${label} ingestion (16 writers, 1 workspace) ÷ base`;
    if (!base) out.push({ name, target: '≥ 1', value: 'n/a (needs --against)', met: null });
    else
      out.push(
        judged(
          name,
          '≥ 1',
          ratio(d.ingest?.oneWorkspace?.eventsPerSecond, base.ingest?.oneWorkspace?.eventsPerSecond),
          (v) => v >= 1,
          ` (${fmt(num(d.ingest?.oneWorkspace?.eventsPerSecond), 0)} / ${fmt(num(base.ingest?.oneWorkspace?.eventsPerSecond), 0)} ev/s)`,
        ),
      );
  }
  return out;
}

export function issue40Table(targets: Target[]): string {
  if (targets.length === 0) return '';
  return [
    '',
    '| issue 40 target | goal | measured | met |',
    '|---|---|---|---|',
    ...targets.map((t) => `| ${t.name} | ${t.target} | ${t.value} | ${t.met === null ? '–' : t.met ? 'yes' : 'NO'} |`),
    '',
  ].join('\n');
}
