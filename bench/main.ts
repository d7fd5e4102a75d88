/**
 * npm run bench -- [--events N] [--quick] [--db sqlite|postgres|both] [--phases a,b,…] [--out FILE]
 *                  [--profile DIR] [--no-redis] [--no-postgres] [--wait-quiet SECONDS]
 *
 * Seeds each database, starts the real server (`node bin/event-feed.js serve`) on it and measures,
 * from load processes of their own: replay throughput, the in-process ceiling, the Redis Streams
 * peer, depth, sparse scope, tailing under load (and on Postgres its floor: bench/tail-floor-server.ts),
 * ingestion (and on Postgres its floor: bench/ingest-floor-server.ts), MCP overhead, the server's memory,
 * and webhook fairness (webhooksPhase, on a server of its own once the others are done).
 * Also long-poll wake-up latency (longPollPhase, on servers of their own, with its floor).
 * Prints a table and writes bench/results.json (or --out). Phases: ceiling, redis, replay, depth,
 * sparse, mcp, tail, ingest, workers, webhooks, replicas, partitions, longpoll (default all). --profile writes the server's `--cpu-prof` profiles
 * there (read them with bench/cpuprofile-summary.ts). See bench/README.md.
 */
import { cpus, loadavg, release, totalmem, tmpdir } from 'node:os';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import knexFactory from 'knex';
import { CursorCodec } from '../src/feed/cursor.ts';
import { feedPageJson } from '../src/feed/page.ts';
import type { ChildProcess } from 'node:child_process';
import { clustersAvailable } from './pg-cluster.ts';
import { longPollPhase, longPollTable, longPollTargets } from './long-poll-phase.ts';
import { partitionsPhase } from './partitions-phase.ts';
import { replicasPhase } from './replicas-phase.ts';
import {
  cpuSecondsOf,
  cpuSecondsOfAll,
  machineLoad,
  memoryOf,
  processTree,
  ROOT,
  runClient,
  sampleLoad,
  sampleMemory,
  startFloorServer,
  startServer,
  treeCpuSecondsOf,
  treeRssMbOf,
  type MemoryPhase,
} from './processes.ts';
import { seed, SPARSE_MAILBOXES, type Seeded } from './seed.ts';
import { median, round, type Latency } from './stats.ts';
import { evaluateTargets, printTable } from './report.ts';
import { webhooksPhase } from './webhook-fairness.ts';
import { openStore } from '../src/store/open-store.ts';
import type { Store } from '../src/store/port.ts';

const { values } = parseArgs({
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
  },
});
const PHASES = [
  'ceiling',
  'redis',
  'replay',
  'depth',
  'sparse',
  'mcp',
  'tail',
  'ingest',
  'workers',
  'webhooks',
  'replicas',
  'partitions',
  'longpoll',
] as const;
const wanted = new Set(values.phases === 'all' ? PHASES : values.phases!.split(','));
const want = (phase: (typeof PHASES)[number]) => wanted.has(phase);

const quick = values.quick!;
const events = values.events !== undefined ? Number(values.events) : quick ? 20_000 : 1_000_000;
if (!Number.isInteger(events) || events < 1000) throw new Error('--events must be an integer ≥ 1000');
const outFile = values.out ?? join(ROOT, 'bench', 'results.json');
const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const runId = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;

// Phase sizes: the full run takes 7-11 minutes at 1M events here; --quick under a minute (bench/README.md).
const P = quick
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
const TAIL_CLIENTS = 200;
// Each tailing client polls again this long after an answer that was not a full page. At 100 ms
// about half the answers are "nothing new" (the writer's 500 events/s are spread over 100 feeds):
// the target's load. Once a second is how feed consumers usually poll: reported alongside.
const TAIL_POLLS_MS = [100, 1000];
const WRITER_RATE = 500;
const INGEST_CONCURRENCY = 16;
const INGEST_WORKSPACES = 100;
// The workers phase: `serve --workers N` for each N, fan-out replay by this many readers, then tailing as above.
const WORKER_COUNTS = [1, 2];
const FANOUT_READERS = 8;

const log = (line: string) => process.stderr.write(`${line}\n`);
const cleanups: Array<() => Promise<void>> = [];
const onSignal = async () => {
  log('interrupted: cleaning up');
  for (const c of cleanups.reverse()) await c().catch(() => {});
  process.exit(130);
};
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);

async function reachable(kind: 'postgres' | 'redis'): Promise<string | undefined> {
  try {
    if (kind === 'postgres') {
      const admin = knexFactory({ client: 'pg', connection: { connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 2000 } });
      try {
        await admin.raw('select 1');
      } finally {
        await admin.destroy();
      }
    } else {
      const r = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
      try {
        await r.connect();
        await r.ping();
      } finally {
        r.disconnect();
      }
    }
    return undefined;
  } catch (err) {
    const reason = `${kind} unreachable (${kind === 'postgres' ? POSTGRES_ADMIN_URL : REDIS_URL}): ${(err as Error).message}`;
    if (['true', '1'].includes((process.env.CI ?? '').toLowerCase())) throw new Error(`CI=true but ${reason}`);
    log(`\n*** ${reason}: its part of the benchmark is SKIPPED ***\n`);
    return reason;
  }
}

interface Database {
  kind: 'sqlite' | 'postgres';
  url: string;
  drop(): Promise<void>;
}

async function createDatabase(kind: 'sqlite' | 'postgres'): Promise<Database> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'event-feed-bench-'));
    return { kind, url: `sqlite:${join(dir, 'bench.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `event_feed_bench_${runId}`;
  const admin = knexFactory({ client: 'pg', connection: POSTGRES_ADMIN_URL });
  await admin.raw(`create database ${name}`);
  await admin.destroy();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    kind,
    url: url.toString(),
    drop: async () => {
      const a = knexFactory({ client: 'pg', connection: POSTGRES_ADMIN_URL });
      await a.raw(`drop database if exists ${name} with (force)`);
      await a.destroy();
    },
  };
}

interface WalStats {
  bytes: number;
  fpi: number;
}

/** The server's WAL counters (pg_stat_wal, the whole server); backends report theirs within a second, so this waits that long first. */
async function walStats(url: string): Promise<WalStats> {
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const db = openStore(url);
  try {
    const { rows } = await db.knex.raw('SELECT wal_bytes, wal_fpi FROM pg_stat_wal');
    return { bytes: Number(rows[0].wal_bytes), fpi: Number(rows[0].wal_fpi) };
  } finally {
    await db.close();
  }
}
const walDelta = (a: WalStats, b: WalStats): WalStats => ({ bytes: b.bytes - a.bytes, fpi: b.fpi - a.fpi });

/** The last seq of each of these workspaces now (0 for an empty feed). */
async function lastSeqs(url: string, workspaceIds: string[]): Promise<Map<string, number>> {
  const db = openStore(url);
  try {
    const rows = await db.knex('feed_counters').select('workspace_id', 'last_seq').whereIn('workspace_id', workspaceIds);
    return new Map(rows.map((r: { workspace_id: string; last_seq: number }) => [r.workspace_id, Number(r.last_seq)]));
  } finally {
    await db.close();
  }
}

type Run = {
  events: number;
  seconds: number;
  eventsPerSecond: number;
  mbPerSecond: number;
  cpuMsPerPage?: number;
  clientCpuMsPerPage?: number;
};
const medianOf = (runs: Run[], field: keyof Run) =>
  runs.every((r) => typeof r[field] === 'number') ? round(median(runs.map((r) => r[field] as number))) : undefined;
const medianRun = (runs: Run[]) => ({
  eventsPerSecond: Math.round(median(runs.map((r) => r.eventsPerSecond))),
  mbPerSecond: round(median(runs.map((r) => r.mbPerSecond)), 1),
  cpuMsPerPage: medianOf(runs, 'cpuMsPerPage'),
  clientCpuMsPerPage: medianOf(runs, 'clientCpuMsPerPage'),
  runs,
});

/** The Redis peer: the measured workspace's envelopes, in feed order, into a stream of a run-unique key. */
async function redisPeer(db: Store, seeded: Seeded) {
  const key = `event-feed-bench:${runId}:stream`;
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  await redis.connect();
  const drop = async () => void (await redis.unlink(key));
  cleanups.push(async () => {
    await drop();
    redis.disconnect();
  });
  try {
    const t0 = performance.now();
    let after = 0;
    let loaded = 0;
    for (;;) {
      const rows = await db.readPageRows({ workspaceId: seeded.workspaceId, afterSeq: after, limit: 5000, mailboxes: null });
      if (rows.length === 0) break;
      const pipeline = redis.pipeline();
      for (const row of rows) pipeline.xadd(key, '*', 'e', row.envelope);
      await pipeline.exec();
      loaded += rows.length;
      after = Number(rows.at(-1)!.seq);
    }
    const loadSeconds = (performance.now() - t0) / 1000;
    const memory = Number(await redis.memory('USAGE', key, 'SAMPLES', '0'));
    // The Redis server's own CPU per page, when it runs on this machine (its pid is then readable).
    const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    const cpu0 = cpuSecondsOf(redisPid);
    const runs = await runClient<Run[]>('client-direct.ts', {
      mode: 'redis',
      redisUrl: REDIS_URL,
      key,
      count: 500,
      warmupPages: P.warmupPages,
      expectEvents: loaded,
      runs: P.replayRuns,
    });
    const pages = runs.reduce((n, r) => n + Math.ceil(r.events / 500) + 1, P.warmupPages);
    const serverCpuMsPerPage = Number.isFinite(cpu0) ? round(((cpuSecondsOf(redisPid) - cpu0) * 1000) / pages) : undefined;
    return { key, loaded, loadSeconds: round(loadSeconds, 1), streamMb: round(memory / 1e6, 1), ...medianRun(runs), serverCpuMsPerPage };
  } finally {
    await drop();
    redis.disconnect();
  }
}

async function benchDatabase(kind: 'sqlite' | 'postgres', withRedis: boolean) {
  const database = await createDatabase(kind);
  cleanups.push(database.drop);
  const result: Record<string, unknown> = { databaseUrl: database.url.replace(/\/\/[^@]*@/, '//') };
  const load = sampleLoad();
  try {
    const db = openStore(database.url);
    let seeded: Seeded;
    let codec: CursorCodec;
    let sparseSeqs: number[];
    // Where each restricted key's own pages of 100 start: after 0, after its 100th event, …
    const scopeBoundaries = new Map<string, number[]>();
    try {
      await db.migrate();
      codec = new CursorCodec(await db.sharedCursorSecret());
      log(`[${kind}] seeding ${events.toLocaleString('en')} events (+20% in neighbour workspaces)…`);
      seeded = await seed(db, {
        events,
        ingestWorkspaces: INGEST_WORKSPACES,
        readKeysPerWorkspace: Math.ceil(TAIL_CLIENTS / INGEST_WORKSPACES),
        log,
      });
      if (kind === 'postgres') await db.knex.raw('analyze');
      result.seed = {
        events: seeded.events,
        otherEvents: seeded.otherEvents,
        sparseEvents: seeded.sparseEvents,
        seconds: round(seeded.seconds, 1),
        eventsPerSecond: Math.round(seeded.eventsPerSecond),
        envelopeBytesMean: Math.round(seeded.envelopeBytes.mean),
      };
      log(`[${kind}] seeded in ${seeded.seconds.toFixed(1)} s (${Math.round(seeded.eventsPerSecond)} events/s)`);
      sparseSeqs = (
        await db
          .knex('events')
          .select('seq')
          .where('workspace_id', seeded.workspaceId)
          .whereIn('mailbox_id', SPARSE_MAILBOXES)
          .orderBy('seq')
      ).map((r: { seq: number }) => Number(r.seq));
      for (const scope of seeded.scopes) {
        const seqs = (
          await db
            .knex('events')
            .select('seq')
            .where('workspace_id', seeded.workspaceId)
            .whereIn('mailbox_id', scope.mailboxes)
            .orderBy('seq')
        ).map((r: { seq: number }) => Number(r.seq));
        scopeBoundaries.set(scope.label, [0, ...seqs.filter((_, i) => (i + 1) % 100 === 0)]);
      }
      if (withRedis && want('redis')) {
        log(`[${kind}] Redis Streams peer…`);
        result.redis = await redisPeer(db, seeded);
      }
    } finally {
      await db.close();
    }

    if (want('ceiling')) {
      log(`[${kind}] ceiling (in-process readPage)…`);
      const ceiling = await runClient<{ runs: Run[]; parseMsPerPage: number }>('client-direct.ts', {
        mode: 'ceiling',
        databaseUrl: database.url,
        workspaceId: seeded.workspaceId,
        limit: 500,
        warmupPages: P.warmupPages,
        expectEvents: seeded.events,
        runs: P.replayRuns,
      });
      result.ceiling = { ...medianRun(ceiling.runs), parseMsPerPage: ceiling.parseMsPerPage };
    }

    /**
     * Tailing: TAIL_CLIENTS clients polling every `pollMs` from the heads of the small workspaces
     * (client i tails workspace i % 100), while a writer emits WRITER_RATE events/s over them;
     * every client must end with exactly the events written to its workspace.
     */
    const tailing = async (url: string, pollMs: number, seedChunk: number) => {
      const heads = await lastSeqs(
        database.url,
        seeded.ingest.map((w) => w.workspaceId),
      );
      const tailClients = Array.from({ length: TAIL_CLIENTS }, (_, i) => {
        const ws = seeded.ingest[i % seeded.ingest.length]!;
        return {
          key: ws.readKeys[Math.floor(i / seeded.ingest.length)]!,
          cursor: codec.encode(ws.workspaceId, heads.get(ws.workspaceId) ?? 0),
        };
      });
      const tailWarmup = Math.min(3, P.tailSeconds * 0.2);
      // The tailing clients finish once the writer has stopped (they are told on stdin): a writer
      // process that started late would otherwise still emit while the clients finish.
      let tailProcess: ChildProcess | undefined;
      const [tail, tailWriter] = await Promise.all([
        runClient<Record<string, any>>(
          'client-http.ts',
          {
            mode: 'tail',
            url,
            clients: tailClients,
            pollMs,
            seconds: P.tailSeconds,
            warmupSeconds: tailWarmup,
            limit: 100,
            drainSeconds: P.tailDrain,
            drainOnStdin: true,
          },
          { onStart: (child) => (tailProcess = child) },
        ),
        runClient<Record<string, any>>('client-http.ts', {
          mode: 'writer',
          url,
          keys: seeded.ingest.map((w) => w.writeKey),
          rate: WRITER_RATE,
          seconds: P.tailSeconds + tailWarmup + 0.5,
          seedChunk,
        }).finally(() => tailProcess?.stdin?.end('drain\n')),
      ]);
      const undelivered = tailClients.filter((_, i) => tail.received[i] !== tailWriter.okPerKey[i % seeded.ingest.length]).length;
      delete tail.received;
      delete tailWriter.okPerKey;
      return { ...tail, writer: tailWriter, clientsMissingEvents: undelivered, allDelivered: undelivered === 0 };
    };

    /**
     * `serve --workers N` for each of WORKER_COUNTS, on its own: FANOUT_READERS readers replaying at
     * once (each on its own connection, from its own place in the measured workspace), then tailing
     * at 100 ms as above. CPU and RSS are the primary's and its workers' together.
     */
    const workersPhase = async () => {
      const runs: Record<string, unknown> = {};
      const N = seeded.lastSeq;
      const starts = Array.from({ length: FANOUT_READERS }, (_, i) =>
        codec.encode(seeded.workspaceId, Math.floor((i * N) / FANOUT_READERS)),
      );
      for (const workers of WORKER_COUNTS) {
        log(
          `[${kind}] ${workers} worker(s): fan-out replay by ${FANOUT_READERS} readers for ${P.fanoutSeconds} s, then tailing at 100 ms…`,
        );
        const served = await startServer(database.url, { env: { WORKERS: String(workers) } });
        try {
          // /healthz answers once one worker listens: wait for the others to be up.
          const deadline = Date.now() + 30_000;
          while (processTree(served.pid).length < workers + (workers > 1 ? 1 : 0) && Date.now() < deadline)
            await new Promise((r) => setTimeout(r, 100));
          await new Promise((r) => setTimeout(r, workers > 1 ? 2000 : 0));
          const cpu0 = treeCpuSecondsOf(served.pid);
          const fan = await runClient<Record<string, any>>('client-http.ts', {
            mode: 'fanout',
            url: served.url,
            key: seeded.keys.read,
            starts,
            seconds: P.fanoutSeconds,
            warmupSeconds: P.fanoutWarmup,
            limit: 500,
          });
          // Warm-up included: the CPU of every page served.
          const fanCpu = treeCpuSecondsOf(served.pid) - cpu0;
          const fanRss = treeRssMbOf(served.pid);
          const tailCpu0 = treeCpuSecondsOf(served.pid);
          const tail = await tailing(served.url, 100, 7_000_011 + workers);
          runs[String(workers)] = {
            fanout: {
              ...fan,
              serverCpuSecondsPerSecond: round(fanCpu / (P.fanoutSeconds + P.fanoutWarmup), 2),
              rssMbAfter: round(fanRss, 1),
            },
            tail: {
              ...tail,
              serverCpuSeconds: round(treeCpuSecondsOf(served.pid) - tailCpu0, 2),
              rssMbAfter: round(treeRssMbOf(served.pid), 1),
            },
          };
        } finally {
          await served.stop();
        }
      }
      // The floor: the same readers against a bare server answering a real page of 500 from memory,
      // every time (bench/floor-server.ts with no end): what this client allows 8 readers here.
      const pageFile = await floorPageFile();
      const floor = await startFloorServer('floor-server.ts', { pageFile, pages: Number.MAX_SAFE_INTEGER });
      try {
        const cpu0 = cpuSecondsOf(floor.pid);
        const fan = await runClient<Record<string, any>>('client-http.ts', {
          mode: 'fanout',
          url: floor.url,
          key: seeded.keys.read,
          starts,
          seconds: P.fanoutSeconds,
          warmupSeconds: P.fanoutWarmup,
          limit: 500,
        });
        const cpu = cpuSecondsOf(floor.pid) - cpu0;
        runs.floor = { fanout: { ...fan, serverCpuSecondsPerSecond: round(cpu / (P.fanoutSeconds + P.fanoutWarmup), 2) } };
      } finally {
        await floor.stop();
        rmSync(dirname(pageFile), { recursive: true, force: true });
      }
      return runs;
    };

    /** One real page of 500 from the middle of the measured workspace, encoded as the service answers it, in a file of its own. */
    const floorPageFile = async () => {
      const pageFile = join(mkdtempSync(join(tmpdir(), 'event-feed-bench-page-')), 'page.json');
      const readDb = openStore(database.url);
      try {
        // The rows, not readPage: its read-ahead of the next page would still be waiting for a
        // connection when readDb is destroyed (knex then warns "Acquire connection error" 5 s later).
        const rows = await readDb.readPageRows({
          workspaceId: seeded.workspaceId,
          afterSeq: Math.floor(seeded.lastSeq / 2),
          limit: 500,
          mailboxes: null,
        });
        const page = {
          bytes: Buffer.from(rows.map((row) => row.envelope).join(',')),
          count: rows.length,
          lastSeq: rows.at(-1)!.seq,
          cutAtByteCap: false,
        };
        writeFileSync(
          pageFile,
          Buffer.concat(feedPageJson({ events: page, next_cursor: codec.encode(seeded.workspaceId, Number(page.lastSeq)) })),
        );
      } finally {
        await readDb.close();
      }
      return pageFile;
    };

    const profileDir = values.profile ? join(values.profile, `${kind}-${runId}`) : undefined;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const server = await startServer(database.url, { cpuProfileDir: profileDir });
    cleanups.push(server.stop);
    const memory: Record<string, MemoryPhase | number> = { atStartMb: round(memoryOf(server.pid)!.rssMb, 1) };
    try {
      const N = seeded.lastSeq;
      if (want('replay')) {
        log(`[${kind}] replay over HTTP (${P.replayRuns} × ${N.toLocaleString('en')} events)…`);
        const replayMemory = sampleMemory(server.pid);
        const replays = [];
        for (let r = 0; r < P.replayRuns; r++) {
          const cpu0 = cpuSecondsOf(server.pid);
          const run = await runClient<Run & { pageMs: Latency; pages: number }>('client-http.ts', {
            mode: 'replay',
            url: server.url,
            key: seeded.keys.read,
            limit: 500,
            warmupPages: P.warmupPages,
            expectEvents: seeded.events,
          });
          replays.push({ ...run, serverCpuMsPerPage: round(((cpuSecondsOf(server.pid) - cpu0) * 1000) / (run.pages + P.warmupPages)) });
        }
        memory.replay = replayMemory.stop();
        result.replay = { ...medianRun(replays), serverCpuMsPerPage: round(median(replays.map((r) => r.serverCpuMsPerPage))) };

        // The floor: the same client against a bare server answering one real page from memory.
        log(`[${kind}] replay floor (the same client, a bare server with a page in memory)…`);
        const pageFile = await floorPageFile();
        const floorPages = Math.max(40, Math.min(400, Math.floor(seeded.events / 500)));
        const floor = await startFloorServer('floor-server.ts', { pageFile, pages: floorPages });
        try {
          const cpu0 = cpuSecondsOf(floor.pid);
          const run = await runClient<Run & { pages: number }>('client-http.ts', {
            mode: 'replay',
            url: floor.url,
            key: seeded.keys.read,
            limit: 500,
            warmupPages: P.warmupPages,
            expectEvents: floorPages * 500,
          });
          result.replayFloor = {
            ...run,
            serverCpuMsPerPage: round(((cpuSecondsOf(floor.pid) - cpu0) * 1000) / (run.pages + P.warmupPages)),
          };
        } finally {
          await floor.stop();
          rmSync(dirname(pageFile), { recursive: true, force: true });
        }
      }

      if (want('depth')) {
        log(`[${kind}] depth…`);
        const depthCursors = { start: 0, middle: Math.floor(N / 2), end: N - 100 };
        const depthProbes = Object.entries(depthCursors).map(([label, afterSeq]) => ({
          label,
          via: 'http',
          key: seeded.keys.read,
          args: { after: codec.encode(seeded.workspaceId, afterSeq), limit: 100 },
        }));
        const depthHttp = await runClient<Record<string, Latency>>('client-http.ts', {
          mode: 'probe',
          url: server.url,
          probes: depthProbes,
          rounds: P.depthRounds,
          warmupRounds: 20,
        });
        const depthDb = await runClient<Record<string, Latency>>('client-direct.ts', {
          mode: 'dbprobe',
          databaseUrl: database.url,
          workspaceId: seeded.workspaceId,
          rounds: P.depthRounds,
          warmupRounds: 20,
          probes: Object.entries(depthCursors).map(([label, afterSeq]) => ({ label, afterSeq, mailboxes: null, limit: 100 })),
        });
        result.depth = {
          positions: depthCursors,
          http: depthHttp,
          db: depthDb,
          endOverStart: round(depthHttp.end!.p50 / depthHttp.start!.p50, 2),
        };
      }

      if (want('sparse')) {
        log(`[${kind}] sparse scope…`);
        // The positions a sparse reader's pages start from: its own page boundaries (after 0, after its 100th event, …).
        const boundaries = [0, ...sparseSeqs.filter((_, i) => (i + 1) % 100 === 0)];
        const pick = boundaries.filter((_, i) => i % Math.max(1, Math.ceil(boundaries.length / 6)) === 0).slice(0, 6);
        const sparseProbes = pick.flatMap((afterSeq) => [
          {
            label: 'sparse',
            via: 'http',
            key: seeded.keys.sparse,
            args: { after: codec.encode(seeded.workspaceId, afterSeq), limit: 100 },
          },
          {
            label: 'unrestricted',
            via: 'http',
            key: seeded.keys.read,
            args: { after: codec.encode(seeded.workspaceId, afterSeq), limit: 100 },
          },
        ]);
        const sparseHttp = await runClient<Record<string, Latency & { eventsPerPage: number }>>('client-http.ts', {
          mode: 'probe',
          url: server.url,
          probes: sparseProbes,
          rounds: P.sparseRounds,
          warmupRounds: 5,
        });
        // Keys restricted to 1, 10 and 50 mailboxes, each against the unrestricted page at its own positions.
        const scopes: Record<string, { http: Record<string, Latency & { eventsPerPage: number }>; ratio: number }> = {};
        for (const scope of seeded.scopes) {
          const bounds = scopeBoundaries.get(scope.label)!;
          const at = bounds.filter((_, i) => i % Math.max(1, Math.ceil(bounds.length / 6)) === 0).slice(0, 6);
          const probes = at.flatMap((afterSeq) => [
            { label: 'scoped', via: 'http', key: scope.key, args: { after: codec.encode(seeded.workspaceId, afterSeq), limit: 100 } },
            {
              label: 'unrestricted',
              via: 'http',
              key: seeded.keys.read,
              args: { after: codec.encode(seeded.workspaceId, afterSeq), limit: 100 },
            },
          ]);
          const http = await runClient<Record<string, Latency & { eventsPerPage: number }>>('client-http.ts', {
            mode: 'probe',
            url: server.url,
            probes,
            rounds: P.sparseRounds,
            warmupRounds: 5,
          });
          scopes[scope.label] = { http, ratio: round(http.scoped!.p50 / http.unrestricted!.p50, 2) };
        }
        result.sparse = {
          sparseEvents: sparseSeqs.length,
          share: round(sparseSeqs.length / seeded.events, 5),
          positions: pick,
          http: sparseHttp,
          ratio: round(sparseHttp.sparse!.p50 / sparseHttp.unrestricted!.p50, 2),
          scopes,
        };
      }

      if (want('mcp')) {
        log(`[${kind}] MCP vs HTTP…`);
        const mcpProbes = [
          { label: 'http', via: 'http', key: seeded.keys.read, args: { limit: 100 } },
          { label: 'mcp', via: 'mcp', key: seeded.keys.read, args: { limit: 100 } },
        ];
        const mcp = await runClient<Record<string, Latency>>('client-http.ts', {
          mode: 'probe',
          url: server.url,
          probes: mcpProbes,
          rounds: P.mcpRounds,
          warmupRounds: 20,
        });
        result.mcp = { ...mcp, overheadMs: round(mcp.mcp!.p50 - mcp.http!.p50, 3), ratio: round(mcp.mcp!.p50 / mcp.http!.p50, 2) };
      }

      if (want('tail')) {
        for (const pollMs of TAIL_POLLS_MS) {
          log(
            `[${kind}] tailing: ${TAIL_CLIENTS} clients on ${INGEST_WORKSPACES} feeds polling every ${pollMs} ms, writer ${WRITER_RATE} events/s over them, ${P.tailSeconds} s…`,
          );
          const tailMemory = sampleMemory(server.pid);
          const tailCpu0 = cpuSecondsOf(server.pid);
          const tail = await tailing(server.url, pollMs, 7_000_001 + pollMs);
          const phase = tailMemory.stop();
          if (!memory.tail || phase.peakMb > (memory.tail as MemoryPhase).peakMb) memory.tail = phase;
          result[pollMs === 100 ? 'tail' : 'tailSlow'] = { ...tail, serverCpuSeconds: round(cpuSecondsOf(server.pid) - tailCpu0, 2) };
        }
        if (kind === 'postgres') {
          // The floor: the same clients at 100 ms against a bare server answering "nothing new",
          // without and then with the round trip a correct answer waits for, while the writer
          // keeps the service and the database as busy with its emits as above. --quick runs only
          // the second, which has all the floor's code, to stay short.
          const tailFloor: Record<string, unknown> = {};
          result.tailFloor = tailFloor;
          const floors = [
            ['answerOnly', false],
            ['roundTrip', true],
          ] as const;
          for (const [label, roundTrip] of quick ? floors.slice(1) : floors) {
            log(`[${kind}] tailing floor (${roundTrip ? 'a bare answer after the round trip' : 'a bare answer'}), ${P.tailSeconds} s…`);
            const floor = await startFloorServer('tail-floor-server.ts', { databaseUrl: database.url, roundTrip });
            try {
              const clients = seeded.ingest.flatMap((ws) => ws.readKeys.map((key) => ({ key, cursor: codec.encode(ws.workspaceId, 0) })));
              const tailWarmup = Math.min(3, P.tailSeconds * 0.2);
              const cpu0 = cpuSecondsOf(floor.pid);
              const serviceCpu0 = cpuSecondsOf(server.pid);
              const [tail] = await Promise.all([
                runClient<Record<string, any>>('client-http.ts', {
                  mode: 'tail',
                  url: floor.url,
                  clients: clients.slice(0, TAIL_CLIENTS),
                  pollMs: 100,
                  seconds: P.tailSeconds,
                  warmupSeconds: tailWarmup,
                  limit: 100,
                  drainSeconds: 0,
                }),
                runClient<Record<string, any>>('client-http.ts', {
                  mode: 'writer',
                  url: server.url,
                  keys: seeded.ingest.map((w) => w.writeKey),
                  rate: WRITER_RATE,
                  seconds: P.tailSeconds + tailWarmup + 0.5,
                  seedChunk: 7_002_001 + Number(roundTrip),
                }),
              ]);
              delete tail.received;
              tailFloor[label] = {
                ...tail,
                serverCpuSeconds: round(cpuSecondsOf(floor.pid) - cpu0, 2),
                serviceCpuSeconds: round(cpuSecondsOf(server.pid) - serviceCpu0, 2),
              };
            } finally {
              await floor.stop();
            }
          }
        }
      }

      if (want('ingest')) {
        log(`[${kind}] ingestion: ${INGEST_CONCURRENCY} clients into 1 workspace, then into ${INGEST_WORKSPACES}…`);
        // Server CPU per event appended (warm-up included, counted from the feeds' counters): less
        // sensitive to other load on the machine than events/s.
        // On Postgres, also what the database did per event: the WAL it wrote (and how many full-page
        // images: the first change to a page after a checkpoint logs the whole 8 kB page) and the CPU
        // of its processes, when they run on this machine.
        const ingestRun = async (keys: string[], workspaceIds: string[], seedChunk: number) => {
          const before = [...(await lastSeqs(database.url, workspaceIds)).values()].reduce((a, b) => a + b, 0);
          const wal0 = kind === 'postgres' ? await walStats(database.url) : undefined;
          const dbCpu0 = kind === 'postgres' ? cpuSecondsOfAll('postgres') : NaN;
          const cpu0 = cpuSecondsOf(server.pid);
          const run = await runClient<Record<string, any>>('client-http.ts', {
            mode: 'ingest',
            url: server.url,
            keys,
            concurrency: INGEST_CONCURRENCY,
            seconds: P.ingestSeconds,
            warmupSeconds: P.ingestWarmup,
            seedChunk,
          });
          const serverCpu = cpuSecondsOf(server.pid) - cpu0;
          const dbCpu = cpuSecondsOfAll('postgres') - dbCpu0;
          const appended = [...(await lastSeqs(database.url, workspaceIds)).values()].reduce((a, b) => a + b, 0) - before;
          const perEvent = (x: number, digits = 2) => (Number.isFinite(x) ? round(x / Math.max(1, appended), digits) : undefined);
          const wal = wal0 ? walDelta(wal0, await walStats(database.url)) : undefined;
          return {
            ...run,
            serverCpuMsPerEvent: perEvent(serverCpu * 1000),
            ...(kind === 'postgres'
              ? {
                  databaseCpuMsPerEvent: perEvent(dbCpu * 1000),
                  walBytesPerEvent: perEvent(wal!.bytes, 0),
                  fullPageImagesPerEvent: perEvent(wal!.fpi, 3),
                }
              : {}),
          };
        };
        const ingestOne = await ingestRun([seeded.keys.write], [seeded.workspaceId], 7_000_002);
        const ingestMany = await ingestRun(
          seeded.ingest.map((w) => w.writeKey),
          seeded.ingest.map((w) => w.workspaceId),
          7_000_003,
        );
        result.ingest = { oneWorkspace: ingestOne, manyWorkspaces: ingestMany };
        if (kind === 'postgres') {
          // The floor: the same clients against a bare server that only inserts the events
          // (bench/ingest-floor-server.ts): what the insert alone allows into 1 and into 100.
          log(`[${kind}] ingestion floor (a bare insert): 1 workspace, then ${INGEST_WORKSPACES}…`);
          const workspaceOfKey = Object.fromEntries([
            [seeded.keys.write, seeded.workspaceId],
            ...seeded.ingest.map((w) => [w.writeKey, w.workspaceId]),
          ]);
          const floor = await startFloorServer('ingest-floor-server.ts', { databaseUrl: database.url, workspaceOfKey });
          try {
            const floorRun = (keys: string[], seedChunk: number) =>
              runClient<Record<string, any>>('client-http.ts', {
                mode: 'ingest',
                url: floor.url,
                keys,
                concurrency: INGEST_CONCURRENCY,
                seconds: P.ingestSeconds,
                warmupSeconds: P.ingestWarmup,
                seedChunk,
              });
            result.ingestFloor = {
              oneWorkspace: await floorRun([seeded.keys.write], 7_000_004),
              manyWorkspaces: await floorRun(
                seeded.ingest.map((w) => w.writeKey),
                7_000_005,
              ),
            };
          } finally {
            await floor.stop();
          }
        }
      }
      memory.peakHwmMb = round(memoryOf(server.pid)!.hwmMb, 1);
      result.memory = memory;
    } finally {
      await server.stop();
    }
    if (want('workers')) result.workers = await workersPhase();
    if (want('longpoll')) {
      result.longpoll = await longPollPhase({
        kind,
        databaseUrl: database.url,
        codec,
        quick,
        log,
        workspaces: seeded.ingest,
        profileDir: values.profile ? join(values.profile, `${kind}-${runId}`) : undefined,
      });
    }
    if (kind === 'postgres' && want('replicas')) {
      // On a primary and a replica of its own; at most 200,000 events (the seed and the replica's catch-up take time).
      result.replicas = clustersAvailable()
        ? await replicasPhase({ events: Math.min(events, 200_000), seconds: P.fanoutSeconds, warmupSeconds: P.fanoutWarmup, log })
        : { skipped: 'no Postgres 15 binaries to start a primary and a replica' };
    }
    if (kind === 'postgres' && want('partitions')) {
      log('[postgres] partitions: reads over weekly partitions against one plain table, and pruning a week both ways…');
      result.partitions = await partitionsPhase({ adminUrl: POSTGRES_ADMIN_URL, runId, events, log });
    }
    if (want('webhooks')) {
      log(`[${kind}] webhooks: another workspace's delivery latency beside 16 slow endpoints and a tarpit…`);
      result.webhooks = await webhooksPhase(database.url, { quick, log });
    }
    return result;
  } finally {
    result.machineLoad = load.stop();
    await database.drop();
  }
}

const machine = {
  cores: cpus().length,
  cpu: cpus()[0]?.model ?? 'unknown',
  memoryGb: round(totalmem() / 2 ** 30, 1),
  node: process.version,
  kernel: release(),
  loadavgAtStart: loadavg().map((x) => round(x, 2)),
};
log(
  `event-feed bench ${runId}: ${events.toLocaleString('en')} events${quick ? ' (quick)' : ''} on ${machine.cores} cores (${machine.cpu}), load ${machine.loadavgAtStart.join(' ')}`,
);
if (values['wait-quiet'] !== undefined) {
  // On a shared machine: wait (up to this many seconds) for the other work to calm down.
  const deadline = Date.now() + Number(values['wait-quiet']) * 1000;
  while (machineLoad().cpuPressure > 25 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5000));
  log(`machine load now: ${JSON.stringify(machineLoad())}`);
}
const started = performance.now();

const wantSqlite = values.db === 'both' || values.db === 'sqlite';
const wantPostgres = (values.db === 'both' || values.db === 'postgres') && !values['no-postgres'];
const redisSkip = values['no-redis'] ? 'skipped by --no-redis' : await reachable('redis');
const postgresSkip = !wantPostgres ? 'not requested' : await reachable('postgres');

const results: Record<string, any> = {
  runId,
  date: new Date().toISOString(),
  quick,
  events,
  machine,
  phases: P,
  tail: { clients: TAIL_CLIENTS, pollsMs: TAIL_POLLS_MS, writerRate: WRITER_RATE },
  ingest: { concurrency: INGEST_CONCURRENCY, workspaces: INGEST_WORKSPACES },
};
results.sqlite = wantSqlite ? await benchDatabase('sqlite', redisSkip === undefined) : { skipped: 'not requested' };
results.redis =
  redisSkip !== undefined
    ? { skipped: redisSkip }
    : (results.sqlite.redis ?? { skipped: 'SQLite not run (the peer holds the SQLite run’s envelopes)' });
delete results.sqlite.redis;
results.postgres = postgresSkip !== undefined ? { skipped: postgresSkip } : await benchDatabase('postgres', false);
results.machine.loadavgAtEnd = loadavg().map((x) => round(x, 2));
results.seconds = round((performance.now() - started) / 1000, 1);
results.targets = [...evaluateTargets(results), ...longPollTargets(results)];

writeFileSync(outFile, `${JSON.stringify(results, null, 2)}\n`);
process.stdout.write(printTable(results));
process.stdout.write(longPollTable(results));
log(`\nwrote ${outFile} in ${results.seconds} s`);
process.exit(0);
