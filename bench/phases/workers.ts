/**
 * `serve --workers N` for each of WORKER_COUNTS, on its own: FANOUT_READERS readers replaying at
 * once (each on its own connection, from its own place in the measured workspace), then tailing at
 * 100 ms. CPU and RSS are the primary's and its workers' together. Then the fan-out floor.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { FANOUT_READERS, log, P, WORKER_COUNTS } from '../config.ts';
import { floorPageFile, tailing, type PhaseContext } from '../context.ts';
import { cpuSecondsOf, processTree, runClient, startFloorServer, startServer, treeCpuSecondsOf, treeRssMbOf } from '../processes.ts';
import { round } from '../stats.ts';
import type { Phase } from './phase.ts';

const startsOf = (ctx: PhaseContext) =>
  Array.from({ length: FANOUT_READERS }, (_, i) =>
    ctx.codec.encode(ctx.seeded.workspaceId, Math.floor((i * ctx.seeded.lastSeq) / FANOUT_READERS)),
  );

const fanout = (ctx: PhaseContext, url: string) =>
  runClient<Record<string, any>>('client-http.ts', {
    mode: 'fanout',
    url,
    key: ctx.seeded.keys.read,
    starts: startsOf(ctx),
    seconds: P.fanoutSeconds,
    warmupSeconds: P.fanoutWarmup,
    limit: 500,
  });

async function withWorkers(ctx: PhaseContext, workers: number) {
  const served = await startServer(ctx.database.url, { env: { WORKERS: String(workers) }, root: ctx.root });
  try {
    // /healthz answers once one worker listens: wait for the others to be up.
    const deadline = Date.now() + 30_000;
    while (processTree(served.pid).length < workers + (workers > 1 ? 1 : 0) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, workers > 1 ? 2000 : 0));
    const cpu0 = treeCpuSecondsOf(served.pid);
    const fan = await fanout(ctx, served.url);
    // Warm-up included: the CPU of every page served.
    const fanCpu = treeCpuSecondsOf(served.pid) - cpu0;
    const fanRss = treeRssMbOf(served.pid);
    const tailCpu0 = treeCpuSecondsOf(served.pid);
    const tail = await tailing(ctx, served.url, 100, 7_000_011 + workers);
    return {
      fanout: { ...fan, serverCpuSecondsPerSecond: round(fanCpu / (P.fanoutSeconds + P.fanoutWarmup), 2), rssMbAfter: round(fanRss, 1) },
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

/** The same readers against a bare server answering a real page of 500 from memory, every time: what this client allows 8 readers here. */
async function fanoutFloor(ctx: PhaseContext) {
  const pageFile = await floorPageFile(ctx);
  const floor = await startFloorServer('floor-server.ts', { pageFile, pages: Number.MAX_SAFE_INTEGER });
  try {
    const cpu0 = cpuSecondsOf(floor.pid);
    const fan = await fanout(ctx, floor.url);
    const cpu = cpuSecondsOf(floor.pid) - cpu0;
    return { fanout: { ...fan, serverCpuSecondsPerSecond: round(cpu / (P.fanoutSeconds + P.fanoutWarmup), 2) } };
  } finally {
    await floor.stop();
    rmSync(dirname(pageFile), { recursive: true, force: true });
  }
}

export const workersPhase: Phase = {
  name: 'workers',
  server: 'own',
  compares: true,
  async run(ctx) {
    const runs: Record<string, unknown> = {};
    for (const workers of WORKER_COUNTS) {
      log(
        `[${ctx.kind}] ${workers} worker(s): fan-out replay by ${FANOUT_READERS} readers for ${P.fanoutSeconds} s, then tailing at 100 ms…`,
      );
      runs[String(workers)] = await withWorkers(ctx, workers);
    }
    runs.floor = await fanoutFloor(ctx);
    ctx.result.workers = runs;
  },
};
