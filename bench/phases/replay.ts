/** Replay: one parsing client following `next_cursor` over the whole measured workspace; then its floor, a bare server with a page in memory. */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { log, P } from '../config.ts';
import { floorPageFile, medianRun, serverOf, type PhaseContext, type Run } from '../context.ts';
import { cpuSecondsOf, runClient, sampleMemory, startFloorServer } from '../processes.ts';
import { median, round, type Latency } from '../stats.ts';
import type { Phase } from './phase.ts';

async function replayFloor(ctx: PhaseContext) {
  log(`[${ctx.kind}] replay floor (the same client, a bare server with a page in memory)…`);
  const pageFile = await floorPageFile(ctx);
  const floorPages = Math.max(40, Math.min(400, Math.floor(ctx.seeded.events / 500)));
  const floor = await startFloorServer('floor-server.ts', { pageFile, pages: floorPages });
  try {
    const cpu0 = cpuSecondsOf(floor.pid);
    const run = await runClient<Run & { pages: number }>('client-http.ts', {
      mode: 'replay',
      url: floor.url,
      key: ctx.seeded.keys.read,
      limit: 500,
      warmupPages: P.warmupPages,
      expectEvents: floorPages * 500,
    });
    return { ...run, serverCpuMsPerPage: round(((cpuSecondsOf(floor.pid) - cpu0) * 1000) / (run.pages + P.warmupPages)) };
  } finally {
    await floor.stop();
    rmSync(dirname(pageFile), { recursive: true, force: true });
  }
}

export const replayPhase: Phase = {
  name: 'replay',
  server: 'shared',
  compares: true,
  async run(ctx) {
    const server = serverOf(ctx);
    log(`[${ctx.kind}] replay over HTTP (${P.replayRuns} × ${ctx.seeded.lastSeq.toLocaleString('en')} events)…`);
    const replayMemory = sampleMemory(server.pid);
    const replays = [];
    for (let r = 0; r < P.replayRuns; r++) {
      const cpu0 = cpuSecondsOf(server.pid);
      const run = await runClient<Run & { pageMs: Latency; pages: number }>('client-http.ts', {
        mode: 'replay',
        url: server.url,
        key: ctx.seeded.keys.read,
        limit: 500,
        warmupPages: P.warmupPages,
        expectEvents: ctx.seeded.events,
      });
      replays.push({ ...run, serverCpuMsPerPage: round(((cpuSecondsOf(server.pid) - cpu0) * 1000) / (run.pages + P.warmupPages)) });
    }
    ctx.memory.replay = replayMemory.stop();
    ctx.result.replay = { ...medianRun(replays), serverCpuMsPerPage: round(median(replays.map((r) => r.serverCpuMsPerPage))) };
    ctx.result.replayFloor = await replayFloor(ctx);
  },
};
