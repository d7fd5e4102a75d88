/**
 * Phase 13, long-poll (`Prefer: wait` on event_feed): wake-up latency of held polls.
 * 1,000 polls (--quick: 300), 10 per workspace of the small ones the seed made (one read key each),
 * each on a connection of its own, held with `Prefer: wait=25` from the head and polling again at
 * once from each answer's next_cursor (client-longpoll.ts polls). Once every poll is on its
 * connection, a writer in another process emits 20 events/s (open loop) round-robin over those
 * workspaces (client-longpoll.ts emitter). The latency of one (poll, event) is the poll's answer
 * arrival minus the emit's answer arrival, both on the machine's one clock (it may be slightly
 * negative: the poll can be answered before the writer has read its own answer). Counted for the
 * emits sent in the `seconds` after `warmupSeconds`; every poll must end with every event of its
 * workspace exactly once.
 * Runs: a service of its own (MAX_CONNECTIONS and MAX_CONNECTIONS_PER_ADDRESS 4096, so 1,000
 * connections from one address fit; the rest defaults); on Postgres also two instances on the
 * database, the polls held on A and the writer emitting through B (the wake crosses the Postgres
 * change channel); and the floor (long-poll-floor-server.ts): the same client and writer against a
 * bare node:http server holding each poll until its workspace gets an emit, no database.
 */
import type { ChildProcess } from 'node:child_process';
import type { CursorCodec } from '../src/feed/cursor.ts';
import { openStore } from '../src/store/open-store.ts';
import type { PollRecord } from './client-longpoll.ts';
import { cpuSecondsOf, runClient, sampleLoad, sampleMemory, startFloorServer, startServer, type MemoryPhase } from './processes.ts';
import { round } from './stats.ts';

const POLLS_PER_WORKSPACE = 10;
const WRITER_RATE = 20;
const WAIT_SECONDS = 25;
const LIMIT = 500;
/** After the writer stops: the last wake-ups arrive within this. */
const SETTLE_MS = 2000;
/** A poll answered empty (its wait ran out) while an event of its workspace was answered to the writer more than this long ago: a missed wake-up. */
const MISS_AFTER_MS = 1000;
/** The service's own bound on RSS (docs/limits-and-isolation.md, Memory budget). */
export const RSS_BOUND_MB = 256;
const SERVER_ENV = { MAX_CONNECTIONS: '4096', MAX_CONNECTIONS_PER_ADDRESS: '4096' };

export interface LongPollWorkspace {
  workspaceId: string;
  writeKey: string;
  readKeys: string[];
}

interface Endpoint {
  url: string;
  pid: number;
}

export async function longPollPhase(o: {
  kind: 'sqlite' | 'postgres';
  databaseUrl: string;
  codec: CursorCodec;
  workspaces: LongPollWorkspace[];
  quick: boolean;
  profileDir?: string;
  /** The checkout whose built server is measured (the current one by default). */
  root?: string;
  log: (line: string) => void;
}) {
  const polls = o.quick ? 300 : 1000;
  const seconds = o.quick ? 8 : 30;
  const warmupSeconds = o.quick ? 1 : 3;
  const workspaces = o.workspaces.slice(0, Math.ceil(polls / POLLS_PER_WORKSPACE));
  if (workspaces.length * POLLS_PER_WORKSPACE < polls)
    throw new Error(`long-poll: ${polls} polls need ${polls / POLLS_PER_WORKSPACE} workspaces, the seed made ${o.workspaces.length}`);
  const shape = {
    polls,
    workspaces: workspaces.length,
    pollsPerWorkspace: POLLS_PER_WORKSPACE,
    waitSeconds: WAIT_SECONDS,
    writerRate: WRITER_RATE,
    seconds,
    warmupSeconds,
    limit: LIMIT,
  };
  const result: Record<string, unknown> = { ...shape };
  // Poll i tails workspace i % W with that workspace's first read key.
  const pollKeys = workspaces.map((w) => w.readKeys[0]!);
  const writeKeys = workspaces.map((w) => w.writeKey);
  const run = (label: string, polled: Endpoint, written: Endpoint, cursors: string[], seedChunk: number) =>
    measure({ label, polls, polled, written, keys: pollKeys, cursors, writeKeys, seconds, warmupSeconds, seedChunk, log: o.log });

  const serverOptions = (name: string) => ({
    env: SERVER_ENV,
    root: o.root,
    ...(o.profileDir ? { cpuProfileDir: `${o.profileDir}/longpoll-${name}` } : {}),
  });
  // Fresh servers for each run: nothing one run leaves behind (its closed polls) weighs on the next.
  o.log(
    `[${o.kind}] long-poll: ${polls} polls held (wait=${WAIT_SECONDS}) on ${workspaces.length} workspaces, writer ${WRITER_RATE}/s, ${seconds} s…`,
  );
  const a = await startServer(o.databaseUrl, serverOptions('one'));
  try {
    result.oneInstance = await run('one instance', a, a, await headCursors(o.databaseUrl, o.codec, workspaces), 7_013_001);
  } finally {
    await a.stop();
  }
  if (o.kind === 'postgres') {
    o.log(`[${o.kind}] long-poll, two instances: polls held on A, the writer emitting through B, ${seconds} s…`);
    const [a2, b] = await Promise.all([startServer(o.databaseUrl, serverOptions('a')), startServer(o.databaseUrl, serverOptions('b'))]);
    try {
      result.twoInstances = await run('two instances', a2, b, await headCursors(o.databaseUrl, o.codec, workspaces), 7_013_002);
    } finally {
      await Promise.all([a2.stop(), b.stop()]);
    }
  }
  o.log(`[${o.kind}] long-poll floor: the same polls and writer against a bare node:http server, ${seconds} s…`);
  const workspaceOfKey = Object.fromEntries(workspaces.flatMap((w, i) => [[w.writeKey, i], ...w.readKeys.map((k) => [k, i])]));
  const floor = await startFloorServer('long-poll-floor-server.ts', { workspaceOfKey });
  try {
    const endpoint = { url: floor.url, pid: floor.pid };
    result.floor = await run(
      'floor',
      endpoint,
      endpoint,
      pollKeys.map(() => '0'),
      7_013_003,
    );
  } finally {
    await floor.stop();
  }
  result.oneWorkspace = await oneWorkspace(o, seconds, warmupSeconds);
  return result;
}

/** Polls held on one workspace, all woken by each emit: the workspace with hundreds of followers. */
const ONE_WORKSPACE_POLLS = [200, 1000];
/** Each emit wakes every poll: a few a second is already thousands of answers a second. */
const ONE_WORKSPACE_WRITER_RATE = 2;
/** Room for a thousand polls of one key and one workspace (the defaults give each a quarter of HELD_READS_MAX). */
const ONE_WORKSPACE_ENV = { ...SERVER_ENV, HELD_READS_PER_KEY: '4096', HELD_READS_PER_WORKSPACE: '4096' };

/**
 * 200, then 1,000 polls (--quick: 200) held on ONE workspace with one read key, each on a
 * connection of its own, woken together by each of the writer's emits (2 a second): the service
 * (one instance), and the floor (the same client and writer against the bare server). Latency per
 * (poll, event) as above; what matters is its ratio to the floor's, p50 and p99.
 */
async function oneWorkspace(o: Parameters<typeof longPollPhase>[0], seconds: number, warmupSeconds: number) {
  const w = o.workspaces[0]!;
  const out: Record<string, unknown> = {};
  for (const polls of o.quick ? [200] : ONE_WORKSPACE_POLLS) {
    const run = (label: string, endpoint: Endpoint, cursor: string, seedChunk: number) =>
      measure({
        label,
        polls,
        writerRate: ONE_WORKSPACE_WRITER_RATE,
        polled: endpoint,
        written: endpoint,
        keys: [w.readKeys[0]!],
        cursors: [cursor],
        writeKeys: [w.writeKey],
        seconds,
        warmupSeconds,
        seedChunk,
        log: o.log,
      });
    o.log(
      `[${o.kind}] long-poll, one workspace: ${polls} polls of one key, woken together by each emit (${ONE_WORKSPACE_WRITER_RATE}/s), ${seconds} s…`,
    );
    const server = await startServer(o.databaseUrl, {
      env: ONE_WORKSPACE_ENV,
      root: o.root,
      ...(o.profileDir ? { cpuProfileDir: `${o.profileDir}/longpoll-one-workspace-${polls}` } : {}),
    });
    let service: unknown;
    try {
      service = await run(`${polls} polls, one workspace`, server, (await headCursors(o.databaseUrl, o.codec, [w]))[0]!, 7_014_000 + polls);
    } finally {
      await server.stop();
    }
    const floor = await startFloorServer('long-poll-floor-server.ts', { workspaceOfKey: { [w.writeKey]: 0, [w.readKeys[0]!]: 0 } });
    let floorRun: unknown;
    try {
      floorRun = await run(`${polls} polls, one workspace, floor`, { url: floor.url, pid: floor.pid }, '0', 7_015_000 + polls);
    } finally {
      await floor.stop();
    }
    out[`polls${polls}`] = { service, floor: floorRun };
  }
  return out;
}

/** Each workspace's polls' first cursor: its head now (earlier phases may have written there). */
async function headCursors(url: string, codec: CursorCodec, workspaces: LongPollWorkspace[]): Promise<string[]> {
  const db = openStore(url);
  try {
    const rows = await db
      .knex('feed_counters')
      .select('workspace_id', 'last_seq')
      .whereIn(
        'workspace_id',
        workspaces.map((w) => w.workspaceId),
      );
    const head = new Map(rows.map((r: { workspace_id: string; last_seq: number }) => [r.workspace_id, Number(r.last_seq)]));
    return workspaces.map((w) => codec.encode(w.workspaceId, head.get(w.workspaceId) ?? 0));
  } finally {
    await db.close();
  }
}

type EmitterResult = {
  sent: number;
  ok: number;
  errors: number;
  skipped: number;
  errorSamples: string[];
  startedAt: number;
  seconds: number;
  latency: Record<string, number>;
  emits: Array<[number, string, number, number]>;
};
type PollsResult = {
  polls: number;
  readySeconds: number;
  notApplied: number;
  errorSamples: string[];
  clientCpuShare: number;
  clientLoopDelayMs: Record<string, number>;
  records: PollRecord[];
};

async function measure(m: {
  label: string;
  polls: number;
  /** Emits per second (WRITER_RATE unless given). */
  writerRate?: number;
  polled: Endpoint;
  written: Endpoint;
  keys: string[];
  cursors: string[];
  writeKeys: string[];
  seconds: number;
  warmupSeconds: number;
  seedChunk: number;
  log: (line: string) => void;
}) {
  const load = sampleLoad(1000);
  const pids = [...new Set([m.polled.pid, m.written.pid])];
  const memory = pids.map((pid) => sampleMemory(pid));
  let child: ChildProcess | undefined;
  const pollsDone = runClient<PollsResult>(
    'client-longpoll.ts',
    {
      mode: 'polls',
      url: m.polled.url,
      polls: m.polls,
      workspaces: m.keys.map((key, i) => ({ key, cursor: m.cursors[i] })),
      waitSeconds: WAIT_SECONDS,
      limit: LIMIT,
      settleMs: SETTLE_MS,
    },
    { onStart: (c) => (child = c) },
  );
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child!.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      if (out.includes('ready\n')) resolve();
    });
    pollsDone.catch(reject);
  });
  const cpu0 = pids.map(cpuSecondsOf);
  const t0 = performance.now();
  const writer = await runClient<EmitterResult>('client-longpoll.ts', {
    mode: 'emitter',
    url: m.written.url,
    keys: m.writeKeys,
    rate: m.writerRate ?? WRITER_RATE,
    seconds: m.warmupSeconds + m.seconds,
    seedChunk: m.seedChunk,
  });
  child!.stdin!.write('drain\n');
  const pollsResult = await pollsDone;
  const wall = (performance.now() - t0) / 1000;
  const cpu = pids.map((pid, i) => round((cpuSecondsOf(pid) - cpu0[i]!) / wall, 3));
  const rss = memory.map((s) => s.stop());
  const machineLoad = load.stop();

  const analysed = analyse(writer, pollsResult.records, m.writeKeys.length, m.warmupSeconds, m.seconds);
  const out = {
    ...analysed,
    errors: analysed.pollErrors + writer.errors,
    writer: {
      sent: writer.sent,
      ok: writer.ok,
      errors: writer.errors,
      skipped: writer.skipped,
      emitMs: writer.latency,
      errorSamples: writer.errorSamples,
    },
    pollsReadySeconds: pollsResult.readySeconds,
    preferenceNotApplied: pollsResult.notApplied,
    pollErrorSamples: pollsResult.errorSamples,
    clientCpuShare: pollsResult.clientCpuShare,
    clientLoopDelayMs: pollsResult.clientLoopDelayMs,
    // CPU share of a core over the run (from the polls' readiness to their end), and RSS from before the polls to their end.
    serverCpuShare: cpu[0],
    serverRss: rss[0] as MemoryPhase,
    ...(pids.length > 1 ? { writeServerCpuShare: cpu[1], writeServerRss: rss[1] as MemoryPhase } : {}),
    machineLoad,
  };
  m.log(
    `  ${m.label}: wake-up p50 ${out.latencyMs.p50} / p99 ${out.latencyMs.p99} / max ${out.latencyMs.max} ms over ${out.wakeUps} wake-ups, ${out.errors} errors, ${out.misses} misses, ${out.allDeliveredOnce ? 'every poll got every event once' : 'NOT every event once'}; server CPU ${Math.round(cpu[0]! * 100)}%, RSS peak ${out.serverRss.peakMb} MB; CPU pressure ${machineLoad.cpuPressureMean}%`,
  );
  return out;
}

function percentiles(xs: number[]) {
  if (xs.length === 0) return { n: 0, min: NaN, p50: NaN, p90: NaN, p99: NaN, max: NaN, mean: NaN };
  const s = Float64Array.from(xs).sort();
  const at = (q: number) => round(s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!, 2);
  return {
    n: s.length,
    min: round(s[0]!, 2),
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    max: round(s.at(-1)!, 2),
    mean: round(s.reduce((a, b) => a + b, 0) / s.length, 2),
  };
}

/** Latency per (poll, event) of the measured emits, and whether every poll got every event of its workspace once. */
export function analyse(
  writer: Pick<EmitterResult, 'emits' | 'startedAt'>,
  records: PollRecord[],
  workspaces: number,
  warmupSeconds: number,
  seconds: number,
) {
  const from = writer.startedAt + warmupSeconds * 1000;
  const to = from + seconds * 1000;
  const emitted = new Map<string, { w: number; sent: number; answered: number }>();
  const ofWorkspace: string[][] = Array.from({ length: workspaces }, () => []);
  for (const [w, id, sent, answered] of writer.emits) {
    emitted.set(id, { w, sent, answered });
    ofWorkspace[w]!.push(id);
  }
  const samples: number[] = [];
  // Per measured event: the latency of the first and of the last of its workspace's polls to get it.
  const perEvent = new Map<string, { first: number; last: number }>();
  let duplicates = 0;
  let missing = 0;
  let unexpected = 0;
  let misses = 0;
  let pollErrors = 0;
  let requests = 0;
  let emptyAnswers = 0;
  let complete = 0;
  let over1s = 0;
  records.forEach((record, i) => {
    const w = i % workspaces;
    const seen = new Map<string, number>();
    let bad = 0;
    for (const [id, t] of record.events) {
      if (seen.has(id)) {
        duplicates++;
        bad++;
        continue;
      }
      seen.set(id, t);
      const e = emitted.get(id);
      if (!e || e.w !== w) {
        unexpected++;
        bad++;
        continue;
      }
      if (t - e.answered > MISS_AFTER_MS) over1s++;
      if (e.sent >= from && e.sent < to) {
        const ms = t - e.answered;
        samples.push(ms);
        const span = perEvent.get(id);
        if (!span) perEvent.set(id, { first: ms, last: ms });
        else {
          span.first = Math.min(span.first, ms);
          span.last = Math.max(span.last, ms);
        }
      }
    }
    for (const id of ofWorkspace[w]!) {
      if (!seen.has(id)) {
        missing++;
        bad++;
      }
    }
    // An empty answer (the wait ran out) while an event answered to the writer over 1 s before was not yet given to this poll.
    for (const t of record.empties) {
      if (ofWorkspace[w]!.some((id) => emitted.get(id)!.answered < t - MISS_AFTER_MS && !((seen.get(id) ?? Infinity) <= t))) misses++;
    }
    pollErrors += record.errors;
    requests += record.requests;
    emptyAnswers += record.empties.length;
    if (bad === 0 && record.errors === 0) complete++;
  });
  return {
    latencyMs: percentiles(samples),
    wakeUps: samples.length,
    /** Of each event's polls, the first and the last answered: how long one workspace's wake-ups take to go out. */
    firstPollMs: percentiles([...perEvent.values()].map((s) => s.first)),
    lastPollMs: percentiles([...perEvent.values()].map((s) => s.last)),
    /** Last minus first, per event: what answering one workspace's polls one after another costs (the machine's stalls weigh less on it). */
    spreadMs: percentiles([...perEvent.values()].map((s) => s.last - s.first)),
    negative: samples.filter((x) => x < 0).length,
    overOneSecond: over1s,
    requests,
    emptyAnswers,
    pollErrors,
    misses,
    duplicates,
    missing,
    unexpected,
    emitted: writer.emits.length,
    pollsComplete: complete,
    allDeliveredOnce: complete === records.length,
  };
}

/** The phase's targets (issue 22, part 1), judged per run: [name, goal, measured, met]. */
export function longPollTargets(r: any): Array<{ name: string; target: string; value: string; met: boolean | null }> {
  const out: Array<{ name: string; target: string; value: string; met: boolean | null }> = [];
  for (const [label, d] of [
    ['SQLite', r.sqlite],
    ['Postgres', r.postgres],
  ] as const) {
    const lp = d?.longpoll;
    for (const [which, run] of [
      ['', lp?.oneInstance],
      [', two instances', lp?.twoInstances],
    ] as const) {
      if (which && label === 'SQLite') continue;
      const name = `${label}${which} long-poll wake-up (${lp?.polls ?? 1000} held polls, writer ${WRITER_RATE}/s)`;
      const target = `p50 ≤ 10 ms, p99 ≤ 50 ms, 0 errors, RSS < ${RSS_BOUND_MB} MB`;
      if (!run) {
        out.push({ name, target, value: 'n/a', met: null });
        continue;
      }
      const rssPeak = Math.max(run.serverRss.peakMb, run.writeServerRss?.peakMb ?? 0);
      const failures = run.errors + run.misses + (run.allDeliveredOnce ? 0 : 1);
      out.push({
        name,
        target,
        value: `p50 ${run.latencyMs.p50} / p99 ${run.latencyMs.p99} ms, ${run.errors + run.misses} errors, ${run.allDeliveredOnce ? 'all once' : 'NOT all once'}, RSS ${rssPeak} MB`,
        met: run.latencyMs.p50 <= 10 && run.latencyMs.p99 <= 50 && failures === 0 && rssPeak < RSS_BOUND_MB,
      });
    }
    for (const polls of ONE_WORKSPACE_POLLS) {
      const pair = lp?.oneWorkspace?.[`polls${polls}`];
      const name = `${label} ${polls} polls held on one workspace, woken together: p50 and p99 ÷ floor`;
      const target = '≤ 1.5 each, 0 errors, every event once';
      if (!pair) {
        out.push({ name, target, value: 'n/a', met: null });
        continue;
      }
      const ratio = (q: 'p50' | 'p99') => round(pair.service.latencyMs[q] / Math.max(pair.floor.latencyMs[q], 0.01), 2);
      const clean = pair.service.errors + pair.service.misses === 0 && pair.service.allDeliveredOnce;
      out.push({
        name,
        target,
        value: `${ratio('p50')}, ${ratio('p99')} (${pair.service.latencyMs.p50} / ${pair.service.latencyMs.p99} ms vs ${pair.floor.latencyMs.p50} / ${pair.floor.latencyMs.p99} ms)${clean ? '' : ', errors'}`,
        met: ratio('p50') <= 1.5 && ratio('p99') <= 1.5 && clean,
      });
    }
  }
  return out;
}

/** The phase's table (SQLite, Postgres), printed after the main one; empty when the phase did not run. */
export function longPollTable(r: any): string {
  if (!r.sqlite?.longpoll && !r.postgres?.longpoll) return '';
  const rows: string[][] = [];
  const cell = (d: any, f: (lp: any) => string) => {
    if (!d || d.skipped || !d.longpoll) return 'n/a';
    try {
      return f(d.longpoll);
    } catch {
      return 'n/a';
    }
  };
  const both = (name: string, f: (lp: any) => string) => rows.push([name, cell(r.sqlite, f), cell(r.postgres, f)]);
  const wake = (run: any) =>
    `p50 ${run.latencyMs.p50} / p90 ${run.latencyMs.p90} / p99 ${run.latencyMs.p99} / max ${run.latencyMs.max} ms, ${run.wakeUps} wake-ups, ${run.errors + run.misses} err, ${run.allDeliveredOnce ? 'all once' : 'NOT all once'}`;
  const cost = (run: any) =>
    `server ${Math.round(run.serverCpuShare * 100)}%${run.writeServerCpuShare !== undefined ? ` + B ${Math.round(run.writeServerCpuShare * 100)}%` : ''} / client ${Math.round(run.clientCpuShare * 100)}% of a core; RSS ${run.serverRss.startMb} → ${run.serverRss.peakMb} MB`;
  both('long-poll: held polls, wake-up latency', (lp) => wake(lp.oneInstance));
  both('  CPU, RSS', (lp) => cost(lp.oneInstance));
  both('  two instances (held on A, emits through B)', (lp) => (lp.twoInstances ? wake(lp.twoInstances) : 'n/a'));
  both('  two instances: CPU, RSS', (lp) => (lp.twoInstances ? cost(lp.twoInstances) : 'n/a'));
  both('  floor (bare node:http, no database)', (lp) => wake(lp.floor));
  both('  floor: CPU', (lp) => cost(lp.floor));
  const spread = (run: any) => (run ? `${run.spreadMs.p50} / ${run.spreadMs.p90}` : 'n/a');
  both(
    '  last − first poll of an event, p50 / p90 ms',
    (lp) => `${spread(lp.oneInstance)}${lp.twoInstances ? `; two: ${spread(lp.twoInstances)}` : ''}; floor ${spread(lp.floor)}`,
  );
  both(
    '  CPU pressure (service run / floor run)',
    (lp) => `${lp.oneInstance.machineLoad.cpuPressureMean}% / ${lp.floor.machineLoad.cpuPressureMean}%`,
  );
  for (const polls of ONE_WORKSPACE_POLLS) {
    const of = (lp: any) => lp.oneWorkspace?.[`polls${polls}`];
    const ratio = (lp: any, q: 'p50' | 'p99') => round(of(lp).service.latencyMs[q] / Math.max(of(lp).floor.latencyMs[q], 0.01), 2);
    both(`one workspace, ${polls} polls woken together`, (lp) => `${wake(of(lp).service)}`);
    both(`  floor`, (lp) => `${wake(of(lp).floor)}`);
    both(
      `  ÷ floor p50, p99; server CPU`,
      (lp) =>
        `${ratio(lp, 'p50')}, ${ratio(lp, 'p99')}; ${Math.round(of(lp).service.serverCpuShare * 100)}% (floor ${Math.round(of(lp).floor.serverCpuShare * 100)}%) of a core`,
    );
  }
  const cols = ['long-poll (phase 13)', 'SQLite', 'Postgres'];
  const widths = cols.map((c, i) => Math.max(c.length, ...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => `| ${row.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return ['', line(cols), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line), ''].join('\n');
}
