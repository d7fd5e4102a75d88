/**
 * Ingestion: 16 closed-loop writers into the measured workspace, then round-robin into 100; server
 * CPU per event, and on Postgres the database's side per event and the floor of a bare insert.
 */
import { cpuSecondsOf, cpuSecondsOfAll, runClient, startFloorServer } from '../processes.ts';
import { INGEST_CONCURRENCY, INGEST_WORKSPACES, log, P } from '../config.ts';
import { serverOf, type PhaseContext } from '../context.ts';
import { lastSeqs, walDelta, walStats } from '../databases.ts';
import { round } from '../stats.ts';
import type { Phase } from './phase.ts';

const appendedTo = async (ctx: PhaseContext, workspaceIds: string[]) =>
  [...(await lastSeqs(ctx.database.url, workspaceIds)).values()].reduce((a, b) => a + b, 0);

/**
 * Server CPU per event appended (warm-up included, counted from the feeds' counters): less
 * sensitive to other load on the machine than events/s. On Postgres, also what the database did per
 * event: the WAL it wrote (and how many full-page images: the first change to a page after a
 * checkpoint logs the whole 8 kB page) and the CPU of its processes, when they run on this machine.
 */
async function ingestRun(ctx: PhaseContext, keys: string[], workspaceIds: string[], seedChunk: number) {
  const server = serverOf(ctx);
  const postgres = ctx.kind === 'postgres';
  const before = await appendedTo(ctx, workspaceIds);
  const wal0 = postgres ? await walStats(ctx.database.url) : undefined;
  const dbCpu0 = postgres ? cpuSecondsOfAll('postgres') : NaN;
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
  const appended = (await appendedTo(ctx, workspaceIds)) - before;
  const perEvent = (x: number, digits = 2) => (Number.isFinite(x) ? round(x / Math.max(1, appended), digits) : undefined);
  const wal = wal0 ? walDelta(wal0, await walStats(ctx.database.url)) : undefined;
  return {
    ...run,
    serverCpuMsPerEvent: perEvent(serverCpu * 1000),
    ...(postgres
      ? {
          databaseCpuMsPerEvent: perEvent(dbCpu * 1000),
          walBytesPerEvent: perEvent(wal!.bytes, 0),
          fullPageImagesPerEvent: perEvent(wal!.fpi, 3),
        }
      : {}),
  };
}

/** The same clients against a bare server that only inserts the events (the ingest floor server): what the insert alone allows into 1 and into 100. */
async function ingestFloor(ctx: PhaseContext) {
  const { seeded } = ctx;
  log(`[${ctx.kind}] ingestion floor (a bare insert): 1 workspace, then ${INGEST_WORKSPACES}…`);
  const workspaceOfKey = Object.fromEntries([
    [seeded.keys.write, seeded.workspaceId],
    ...seeded.ingest.map((w) => [w.writeKey, w.workspaceId]),
  ]);
  const floor = await startFloorServer('ingest-floor-server.ts', { databaseUrl: ctx.database.url, workspaceOfKey });
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
    return {
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

export const ingestPhase: Phase = {
  name: 'ingest',
  server: 'shared',
  compares: true,
  async run(ctx) {
    const { seeded } = ctx;
    log(`[${ctx.kind}] ingestion: ${INGEST_CONCURRENCY} clients into 1 workspace, then into ${INGEST_WORKSPACES}…`);
    const oneWorkspace = await ingestRun(ctx, [seeded.keys.write], [seeded.workspaceId], 7_000_002);
    const manyWorkspaces = await ingestRun(
      ctx,
      seeded.ingest.map((w) => w.writeKey),
      seeded.ingest.map((w) => w.workspaceId),
      7_000_003,
    );
    ctx.result.ingest = { oneWorkspace, manyWorkspaces };
    if (ctx.kind === 'postgres') ctx.result.ingestFloor = await ingestFloor(ctx);
  },
};
