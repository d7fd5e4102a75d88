/** The targets of the issue, judged on one run's results, and the table printed at the end. */

export interface Target {
  name: string;
  target: string;
  value: string;
  met: boolean | null; // null: not measured in this run (skipped, or not at the scale the target names)
}

const num = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);
const fmt = (x: number | undefined, digits = 0) =>
  x === undefined ? 'n/a' : x.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function evaluateTargets(r: any): Target[] {
  const t: Target[] = [];
  const add = (name: string, target: string, value: number | undefined, ok: (v: number) => boolean, digits = 2, note = '') =>
    t.push({
      name,
      target,
      value: value === undefined ? 'n/a' : `${fmt(value, digits)}${note}`,
      met: value === undefined ? null : ok(value),
    });
  const s = r.sqlite ?? {};
  const p = r.postgres ?? {};
  const ratio = (a: unknown, b: unknown) => (num(a) !== undefined && num(b) ? (a as number) / (b as number) : undefined);

  add('SQLite replay ÷ Redis Streams', '≥ 1.5', ratio(s.replay?.eventsPerSecond, r.redis?.eventsPerSecond), (v) => v >= 1.5);
  // Issue 35: the cost of a page served, against the same client on a bare server in the same run.
  for (const [label, d] of [
    ['SQLite', s],
    ['Postgres', p],
  ] as const) {
    add(
      `${label} replay ÷ floor (one parsing client, pages of 500)`,
      '≥ 0.9',
      ratio(d.replay?.eventsPerSecond, d.replayFloor?.eventsPerSecond),
      (v) => v >= 0.9,
      2,
      num(d.replay?.serverCpuMsPerPage) === undefined
        ? ''
        : ` (server CPU per page ${fmt(d.replay.serverCpuMsPerPage, 2)} ms, floor ${fmt(d.replayFloor?.serverCpuMsPerPage, 2)} ms)`,
    );
    add(
      `${label} fan-out of 8 readers ÷ floor (1 worker)`,
      '≥ 0.8',
      ratio(d.workers?.['1']?.fanout?.eventsPerSecond, d.workers?.floor?.fanout?.eventsPerSecond),
      (v) => v >= 0.8,
    );
  }
  add('SQLite replay ÷ ceiling', '≥ 0.5', ratio(s.replay?.eventsPerSecond, s.ceiling?.eventsPerSecond), (v) => v >= 0.5);
  add('Postgres replay ÷ ceiling', '≥ 0.6', ratio(p.replay?.eventsPerSecond, p.ceiling?.eventsPerSecond), (v) => v >= 0.6);
  for (const [label, d] of [
    ['SQLite', s],
    ['Postgres', p],
  ] as const) {
    const v = num(d.depth?.endOverStart);
    const atScale = r.events >= 1_000_000;
    t.push({
      name: `${label} depth end ÷ start (p50, page of 100)`,
      target: '≤ 1.2 at 1M events',
      value: v === undefined ? 'n/a' : `${fmt(v, 2)}${atScale ? '' : ` (at ${fmt(r.events)} events)`}`,
      met: v === undefined || !atScale ? null : v <= 1.2,
    });
  }
  for (const [label, d] of [
    ['SQLite', s],
    ['Postgres', p],
  ] as const) {
    add(`${label} sparse ÷ unrestricted (p50, page of 100)`, '≤ 2', num(d.sparse?.ratio), (v) => v <= 2);
    for (const [scope, measured] of Object.entries<any>(d.sparse?.scopes ?? {})) {
      add(`${label} key of ${scope} ÷ unrestricted (p50, page of 100)`, '≤ 2', num(measured.ratio), (v) => v <= 2);
    }
  }
  for (const [label, d] of [
    ['SQLite', s],
    ['Postgres', p],
  ] as const) {
    add(`${label} MCP ÷ HTTP page of 100 (p50)`, '≤ 1.5', num(d.mcp?.ratio), (v) => v <= 1.5);
  }
  for (const [label, d] of [
    ['SQLite', s],
    ['Postgres', p],
  ] as const) {
    const tail = d.tail;
    const p99 = num(tail?.latency?.p99);
    t.push({
      name: `${label} tailing p99, errors (200 clients, poll 100 ms, writer 500/s)`,
      target: '≤ 25 ms, 0 errors',
      value: p99 === undefined ? 'n/a' : `${fmt(p99, 1)} ms, ${tail.errors} errors`,
      met: p99 === undefined ? null : p99 <= 25 && tail.errors === 0 && tail.allDelivered,
    });
  }
  add('SQLite ingestion, 1 workspace', '≥ 3,000 events/s', num(s.ingest?.oneWorkspace?.eventsPerSecond), (v) => v >= 3000, 0);
  add('Postgres ingestion, 1 workspace', '≥ 1,500 events/s', num(p.ingest?.oneWorkspace?.eventsPerSecond), (v) => v >= 1500, 0);
  add(
    'Postgres ingestion, 100 ÷ 1 workspace',
    '> 1 (scales)',
    ratio(p.ingest?.manyWorkspaces?.eventsPerSecond, p.ingest?.oneWorkspace?.eventsPerSecond),
    (v) => v > 1,
  );
  for (const [label, d] of [
    ['SQLite', s],
    ['Postgres', p],
  ] as const) {
    const peak = Math.max(num(d.memory?.replay?.peakMb) ?? -1, num(d.memory?.tail?.peakMb) ?? -1);
    const growth = num(d.memory?.replay?.growthMb);
    t.push({
      name: `${label} server peak RSS (replay, tailing); growth over replay`,
      target: '< 150 MB, flat (≤ 10 MB)',
      value:
        peak < 0 ? 'n/a' : `${fmt(num(d.memory?.replay?.peakMb), 1)} / ${fmt(num(d.memory?.tail?.peakMb), 1)} MB; ${fmt(growth, 1)} MB`,
      met: peak < 0 ? null : peak < 150 && (growth ?? 0) <= 10,
    });
  }
  for (const [label, d] of [
    ['SQLite', s],
    ['Postgres', p],
  ] as const) {
    const victim = d.webhooks?.defaults?.victim;
    const p99 = num(victim?.latencyMs?.p99);
    t.push({
      name: `${label} webhook victim latency p99 (another workspace: 16 always-due endpoints + a tarpit)`,
      target: '≤ 2,000 ms, all delivered',
      value: p99 === undefined ? 'n/a' : `${fmt(p99, 0)} ms, ${victim.delivered}/${victim.emitted} delivered`,
      met: p99 === undefined ? null : p99 <= 2000 && victim.allDelivered,
    });
  }
  return t;
}

/** The rows of the main table, built by the three groups of rows below. */
interface Rows {
  r: any;
  rows: string[][];
  both(name: string, f: (d: any) => string): void;
  cell(d: any, f: (d: any) => string): string;
  lat(l: any): string;
}

/** Seed, replay, ceiling, floor, Redis, depth and scoped keys. */
function readRows({ r, rows, both, lat }: Rows): void {
  both('seed (events/s, s)', (d) => `${fmt(d.seed.eventsPerSecond)} ev/s, ${fmt(d.seed.seconds, 1)} s`);
  both('replay HTTP limit=500', (d) => `${fmt(d.replay.eventsPerSecond)} ev/s, ${fmt(d.replay.mbPerSecond, 1)} MB/s`);
  both('ceiling in-process', (d) => `${fmt(d.ceiling.eventsPerSecond)} ev/s, ${fmt(d.ceiling.mbPerSecond, 1)} MB/s`);
  both('replay ÷ ceiling', (d) => fmt(d.replay.eventsPerSecond / d.ceiling.eventsPerSecond, 2));
  both(
    'ceiling page of 500 vs its JSON.parse',
    (d) => `${fmt(500_000 / d.ceiling.eventsPerSecond, 2)} ms vs ${fmt(d.ceiling.parseMsPerPage, 2)} ms`,
  );
  both(
    'replay floor: same client, page from memory',
    (d) => `${fmt(d.replayFloor.eventsPerSecond)} ev/s (${fmt(d.replayFloor.eventsPerSecond / d.ceiling.eventsPerSecond, 2)} × ceiling)`,
  );
  rows.push([
    'Redis Streams XRANGE 500',
    r.redis?.skipped ? 'skipped' : `${fmt(r.redis?.eventsPerSecond)} ev/s, ${fmt(r.redis?.mbPerSecond, 1)} MB/s`,
    '',
  ]);
  both('replay ÷ Redis', (d) => (r.redis?.eventsPerSecond ? fmt(d.replay.eventsPerSecond / r.redis.eventsPerSecond, 2) : 'n/a'));
  for (const pos of ['start', 'middle', 'end']) both(`depth ${pos} (page of 100)`, (d) => lat(d.depth.http[pos]));
  both('depth end ÷ start (p50)', (d) => fmt(d.depth.endOverStart, 2));
  both('depth, readPage alone start/end p50', (d) => `${fmt(d.depth.db.start.p50, 3)} / ${fmt(d.depth.db.end.p50, 3)} ms`);
  both('sparse key page of 100', (d) => `${lat(d.sparse.http.sparse)} (${fmt(d.sparse.http.sparse.eventsPerPage, 0)} ev)`);
  both('unrestricted page of 100', (d) => lat(d.sparse.http.unrestricted));
  both('sparse ÷ unrestricted (p50)', (d) => fmt(d.sparse.ratio, 2));
  for (const scope of ['1 mailbox', '10 mailboxes', '50 mailboxes']) {
    both(
      `key of ${scope}: page of 100 (÷ unrestricted)`,
      (d) =>
        `${lat(d.sparse.scopes[scope].http.scoped)} (${fmt(d.sparse.scopes[scope].http.scoped.eventsPerPage, 0)} ev, ×${fmt(d.sparse.scopes[scope].ratio, 2)})`,
    );
  }
}

/** Tailing, ingestion, fan-out and workers. */
function loadRows({ both, lat }: Rows): void {
  for (const [key, label] of [
    ['tail', 'poll 100 ms'],
    ['tailSlow', 'poll 1 s'],
  ] as const) {
    both(`tailing 200 clients, ${label}`, (d) => `${fmt(d[key].requestsPerSecond)} req/s, ${lat(d[key].latency)}, ${d[key].errors} err`);
    both(
      `  writer 500/s; delivery`,
      (d) =>
        `${fmt(d[key].writer.eventsPerSecond)} ev/s, p99 ${fmt(d[key].writer.latency.p99, 1)} ms; ${d[key].allDelivered ? 'all delivered' : `${d[key].clientsMissingEvents} clients missed events`}`,
    );
    both(
      `  empty answers; server CPU`,
      (d) => `${fmt(d[key].emptyShare * 100, 0)}% empty; ${fmt((d[key].serverCpuSeconds / d[key].totalSeconds) * 100, 0)}% of a core`,
    );
  }
  both(
    'tailing floor, poll 100 ms: bare answer',
    (d) =>
      `${fmt(d.tailFloor.answerOnly.requestsPerSecond)} req/s, ${lat(d.tailFloor.answerOnly.latency)}, ${d.tailFloor.answerOnly.errors} err`,
  );
  both(
    '  bare answer after the round trip',
    (d) =>
      `${fmt(d.tailFloor.roundTrip.requestsPerSecond)} req/s, ${lat(d.tailFloor.roundTrip.latency)}, ${d.tailFloor.roundTrip.errors} err`,
  );
  both(
    'ingest 16 clients → 1 ws',
    (d) =>
      `${fmt(d.ingest.oneWorkspace.eventsPerSecond)} ev/s, p99 ${fmt(d.ingest.oneWorkspace.latency.p99, 1)} ms, ${d.ingest.oneWorkspace.errors} err, ${fmt(d.ingest.oneWorkspace.serverCpuMsPerEvent, 2)} ms CPU/ev`,
  );
  both(
    'ingest 16 clients → 100 ws',
    (d) =>
      `${fmt(d.ingest.manyWorkspaces.eventsPerSecond)} ev/s, p99 ${fmt(d.ingest.manyWorkspaces.latency.p99, 1)} ms, ${d.ingest.manyWorkspaces.errors} err, ${fmt(d.ingest.manyWorkspaces.serverCpuMsPerEvent, 2)} ms CPU/ev`,
  );
  both('ingest 1 ws / 100 ws: database per event', (d) =>
    d.ingest.oneWorkspace.walBytesPerEvent === undefined
      ? 'n/a'
      : `WAL ${fmt(d.ingest.oneWorkspace.walBytesPerEvent)} / ${fmt(d.ingest.manyWorkspaces.walBytesPerEvent)} B (full pages ${fmt(d.ingest.oneWorkspace.fullPageImagesPerEvent, 3)} / ${fmt(d.ingest.manyWorkspaces.fullPageImagesPerEvent, 3)}), CPU ${fmt(d.ingest.oneWorkspace.databaseCpuMsPerEvent, 2)} / ${fmt(d.ingest.manyWorkspaces.databaseCpuMsPerEvent, 2)} ms`,
  );
  both(
    'ingest floor (bare insert) → 1 ws / 100 ws',
    (d) =>
      `${fmt(d.ingestFloor.oneWorkspace.eventsPerSecond)} / ${fmt(d.ingestFloor.manyWorkspaces.eventsPerSecond)} ev/s (100 ÷ 1 = ${fmt(d.ingestFloor.manyWorkspaces.eventsPerSecond / d.ingestFloor.oneWorkspace.eventsPerSecond, 2)}), ${d.ingestFloor.oneWorkspace.errors + d.ingestFloor.manyWorkspaces.errors} err`,
  );
  both(
    'replay ÷ floor; server CPU per page: service / floor',
    (d) =>
      `${fmt(d.replay.eventsPerSecond / d.replayFloor.eventsPerSecond, 2)}; ${fmt(d.replay.serverCpuMsPerPage, 2)} / ${fmt(d.replayFloor.serverCpuMsPerPage, 2)} ms`,
  );
  both(
    'fan-out floor: 8 readers, page from memory',
    (d) =>
      `${fmt(d.workers.floor.fanout.eventsPerSecond)} ev/s, page ${lat(d.workers.floor.fanout.pageMs)}, ${fmt(d.workers.floor.fanout.serverCpuSecondsPerSecond * 100, 0)}% of a core (1 worker ÷ floor ${fmt(d.workers['1'].fanout.eventsPerSecond / d.workers.floor.fanout.eventsPerSecond, 2)})`,
  );
  for (const workers of ['1', '2']) {
    const cpu = (d: any) => d.workers[workers];
    both(
      `${workers} worker(s): fan-out replay, 8 readers`,
      (d) =>
        `${fmt(cpu(d).fanout.eventsPerSecond)} ev/s, page ${lat(cpu(d).fanout.pageMs)}, ${fmt(cpu(d).fanout.serverCpuSecondsPerSecond * 100, 0)}% of a core`,
    );
    both(
      `${workers} worker(s): tailing 200 clients, poll 100 ms`,
      (d) =>
        `${fmt(cpu(d).tail.requestsPerSecond)} req/s, ${lat(cpu(d).tail.latency)}, ${fmt((cpu(d).tail.serverCpuSeconds / cpu(d).tail.totalSeconds) * 100, 0)}% of a core, ${cpu(d).tail.allDelivered ? 'all delivered' : 'MISSED EVENTS'}, RSS ${fmt(cpu(d).tail.rssMbAfter, 0)} MB`,
    );
  }
}

/** Replicas, MCP, webhooks, memory and the machine. */
function otherRows({ r, rows, both, cell, lat }: Rows): void {
  const replicaRun = (run: any) =>
    `readers ${fmt(run.readers.eventsPerSecond)} ev/s, writers ${fmt(run.writers.eventsPerSecond)} ev/s; primary ${fmt(run.primaryCpuPerSecond * 100, 0)}% of a core, ${fmt(run.primaryCpuMsPer1000EventsServed, 2)} ms per 1,000 served`;
  rows.push(['replicas: 8 readers + 16 writers, primary alone', 'n/a', cell(r.postgres, (d) => replicaRun(d.replicas.primaryAlone))]);
  rows.push([
    '  same, with one replica',
    'n/a',
    cell(r.postgres, (d) => `${replicaRun(d.replicas.withReplica)}; replica ${fmt(d.replicas.withReplica.replicaCpuPerSecond * 100, 0)}%`),
  ]);
  both('HTTP page of 100', (d) => lat(d.mcp.http));
  both('MCP tools/call page of 100', (d) => `${lat(d.mcp.mcp)} (×${fmt(d.mcp.ratio, 2)})`);
  const victim = (w: any) =>
    `p50 ${fmt(w.victim.latencyMs.p50, 0)} / p99 ${fmt(w.victim.latencyMs.p99, 0)} / max ${fmt(w.victim.latencyMs.max, 0)} ms, ${w.victim.delivered}/${w.victim.emitted} delivered`;
  both('webhooks: victim latency beside 16 slow + tarpit', (d) => victim(d.webhooks.defaults));
  both('  same, noisy may take every slot', (d) =>
    d.webhooks.noisyMayTakeEverySlot ? victim(d.webhooks.noisyMayTakeEverySlot) : 'not run (--quick)',
  );
  both(
    'erasure: one address, time / other workspace event_feed p99 before → during',
    (d) =>
      `${fmt(d.erasure.eraseSeconds, 1)} s for ${fmt(d.erasure.erasedEvents)} of ${fmt(d.erasure.events)} events; p99 ${fmt(d.erasure.otherFeedBefore.p99, 0)} → ${fmt(d.erasure.otherFeedDuring.p99, 0)} ms`,
  );
  rows.push([
    'tracing off / 100 % / 1 %: page CPU, emit CPU (ms)',
    cell(r.sqlite, (d) => d.tracing.map((v: any) => `${v.variant} ${fmt(v.pageCpuMs, 2)} / ${fmt(v.emitCpuMs, 2)}`).join('; ')),
    'n/a',
  ]);
  both(
    'server RSS replay: start→peak',
    (d) => `${fmt(d.memory.replay.startMb, 0)} → ${fmt(d.memory.replay.peakMb, 0)} MB (growth ${fmt(d.memory.replay.growthMb, 1)})`,
  );
  both('server RSS tailing: peak', (d) => `${fmt(d.memory.tail.peakMb, 0)} MB`);
  both(
    'replay CPU per page of 500: server / client',
    (d) => `${fmt(d.replay.serverCpuMsPerPage, 2)} / ${fmt(d.replay.clientCpuMsPerPage, 2)} ms`,
  );
  both(
    'other load while measuring (CPU pressure, load)',
    (d) =>
      `${fmt(d.machineLoad.cpuPressureMean, 0)}% (max ${fmt(d.machineLoad.cpuPressureMax, 0)}%), ${fmt(d.machineLoad.loadavg1Mean, 1)}`,
  );
}

export function printTable(r: any): string {
  const cols = ['', 'SQLite', 'Postgres'];
  const rows: string[][] = [];
  const both = (name: string, f: (d: any) => string) => rows.push([name, cell(r.sqlite, f), cell(r.postgres, f)]);
  const cell = (d: any, f: (d: any) => string) => {
    if (!d || d.skipped) return 'skipped';
    try {
      return f(d);
    } catch {
      return 'n/a';
    }
  };
  const lat = (l: any) => `p50 ${fmt(l.p50, 2)} / p99 ${fmt(l.p99, 2)} ms`;
  const t: Rows = { r, rows, both, cell, lat };
  readRows(t);
  loadRows(t);
  otherRows(t);
  const widths = cols.map((c, i) => Math.max(c.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (row: string[]) => `| ${row.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const out = [
    '',
    `event-feed bench: ${fmt(r.events)} events, ${r.machine.cores} cores (${r.machine.cpu}), Node ${r.machine.node}, load ${r.machine.loadavgAtStart.join(' ')}`,
    '',
    line(cols),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.map(line),
    '',
    '| target | goal | measured | met |',
    '|---|---|---|---|',
    ...r.targets.map((t: Target) => `| ${t.name} | ${t.target} | ${t.value} | ${t.met === null ? '–' : t.met ? 'yes' : 'NO'} |`),
    '',
  ];
  return out.join('\n');
}
