/**
 * The comparison with the base of `--against`: each headline figure on both sides, its ratio to the
 * base, and a mark where it is worse than the base by more than the noise threshold.
 */
const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);
const fmt = (x: number | undefined, digits = Math.abs(x ?? 0) >= 100 ? 0 : 2) =>
  x === undefined ? 'n/a' : x.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ratio = (a: unknown, b: unknown) => (num(a) !== undefined && num(b) ? (a as number) / (b as number) : undefined);

interface Figure {
  name: string;
  /** 'up': more is better (throughput, a ratio to a floor); 'down': less is better (latency, CPU, a ratio to a cheaper path). */
  better: 'up' | 'down';
  of(d: any): number | undefined;
}

const onePoll = (d: any, polls: number, q: 'p50' | 'p99') => {
  const pair = d.longpoll?.oneWorkspace?.[`polls${polls}`];
  return ratio(pair?.service?.latencyMs?.[q], Math.max(num(pair?.floor?.latencyMs?.[q]) ?? NaN, 0.01));
};

export const FIGURES: Figure[] = [
  { name: 'replay ev/s', better: 'up', of: (d) => num(d.replay?.eventsPerSecond) },
  { name: 'replay ÷ floor', better: 'up', of: (d) => ratio(d.replay?.eventsPerSecond, d.replayFloor?.eventsPerSecond) },
  { name: 'server CPU per page of 500 (ms)', better: 'down', of: (d) => num(d.replay?.serverCpuMsPerPage) },
  { name: 'depth end p50 (ms)', better: 'down', of: (d) => num(d.depth?.http?.end?.p50) },
  {
    name: 'restricted key ÷ unrestricted (worst of 1, 10, 50)',
    better: 'down',
    of: (d) => {
      const all = Object.values<any>(d.sparse?.scopes ?? {}).map((s) => num(s.ratio));
      return all.length && all.every((x) => x !== undefined) ? Math.max(...(all as number[])) : undefined;
    },
  },
  { name: 'unrestricted page of 100 p50 (ms)', better: 'down', of: (d) => num(d.sparse?.http?.unrestricted?.p50) },
  { name: 'MCP ÷ HTTP page', better: 'down', of: (d) => num(d.mcp?.ratio) },
  { name: 'HTTP page of 100 p50 (ms)', better: 'down', of: (d) => num(d.mcp?.http?.p50) },
  { name: 'tailing 100 ms: p99 (ms)', better: 'down', of: (d) => num(d.tail?.latency?.p99) },
  { name: 'tailing 100 ms: server CPU s', better: 'down', of: (d) => num(d.tail?.serverCpuSeconds) },
  { name: 'ingestion → 1 ws, ev/s', better: 'up', of: (d) => num(d.ingest?.oneWorkspace?.eventsPerSecond) },
  { name: 'ingestion → 100 ws, ev/s', better: 'up', of: (d) => num(d.ingest?.manyWorkspaces?.eventsPerSecond) },
  { name: 'ingestion server CPU per event (ms)', better: 'down', of: (d) => num(d.ingest?.oneWorkspace?.serverCpuMsPerEvent) },
  {
    name: 'fan-out of 8 ÷ floor (1 worker)',
    better: 'up',
    of: (d) => ratio(d.workers?.['1']?.fanout?.eventsPerSecond, d.workers?.floor?.fanout?.eventsPerSecond),
  },
  { name: 'fan-out of 8, 1 worker, ev/s', better: 'up', of: (d) => num(d.workers?.['1']?.fanout?.eventsPerSecond) },
  { name: 'long-poll wake-up p99 (ms)', better: 'down', of: (d) => num(d.longpoll?.oneInstance?.latencyMs?.p99) },
  { name: '200 polls of one workspace: p50 ÷ floor', better: 'down', of: (d) => onePoll(d, 200, 'p50') },
  { name: '200 polls of one workspace: p99 ÷ floor', better: 'down', of: (d) => onePoll(d, 200, 'p99') },
  { name: '1,000 polls of one workspace: p50 ÷ floor', better: 'down', of: (d) => onePoll(d, 1000, 'p50') },
  { name: '1,000 polls of one workspace: p99 ÷ floor', better: 'down', of: (d) => onePoll(d, 1000, 'p99') },
  { name: 'webhook victim p99 (ms)', better: 'down', of: (d) => num(d.webhooks?.defaults?.victim?.latencyMs?.p99) },
  { name: 'server peak RSS, replay (MB)', better: 'down', of: (d) => num(d.memory?.replay?.peakMb) },
];

export interface Compared {
  name: string;
  current?: number;
  base?: number;
  /** current ÷ base */
  ratio?: number;
  /** worse than the base beyond the noise threshold */
  worse: boolean;
}

export function compare(current: any, base: any, noise: number): Compared[] {
  return FIGURES.map((f) => {
    const c = f.of(current ?? {});
    const b = f.of(base ?? {});
    const r = ratio(c, b);
    const worse = r !== undefined && (f.better === 'up' ? r < 1 - noise : r > 1 + noise);
    return { name: f.name, current: c, base: b, ratio: r, worse };
  }).filter((row) => row.current !== undefined || row.base !== undefined);
}

/** The comparison for each database run, as markdown. */
export function compareTable(results: any, noise: number): string {
  const against = results.against;
  if (!against) return '';
  const out = [
    '',
    `Against ${against.ref} (${String(against.commit).slice(0, 12)}), interleaved in this run; ratio = this code ÷ base; ` +
      `WORSE: beyond ${Math.round(noise * 100)} % noise.`,
  ];
  for (const [label, kind] of [
    ['SQLite', 'sqlite'],
    ['Postgres', 'postgres'],
  ] as const) {
    const current = results[kind];
    if (!current || current.skipped) continue;
    const rows = compare(current, against[kind], noise);
    out.push('', `| ${label} | this code | base | ratio | |`, '|---|---|---|---|---|');
    for (const row of rows)
      out.push(`| ${row.name} | ${fmt(row.current)} | ${fmt(row.base)} | ${fmt(row.ratio)} | ${row.worse ? 'WORSE' : ''} |`);
    const failed = against[kind]?.failed;
    if (failed)
      for (const [phase, why] of Object.entries(failed)) out.push(`| base failed in ${phase} | ${String(why).split('\n')[0]} | | | |`);
  }
  out.push('');
  return out.join('\n');
}
