/**
 * Tailing: 200 clients polling the small workspaces at 100 ms and at 1 s while a writer emits 500
 * events/s; on Postgres also its floor, a bare server answering every poll "nothing new".
 */
import { INGEST_WORKSPACES, log, P, quick, TAIL_CLIENTS, TAIL_POLLS_MS, WRITER_RATE } from '../config.ts';
import { serverOf, tailing, type PhaseContext } from '../context.ts';
import { cpuSecondsOf, runClient, sampleMemory, startFloorServer, type MemoryPhase } from '../processes.ts';
import { round } from '../stats.ts';
import type { Phase } from './phase.ts';

/** The same clients at 100 ms against the bare server, the writer still emitting into the service. */
async function tailFloorRun(ctx: PhaseContext, roundTrip: boolean) {
  const { seeded, codec } = ctx;
  const server = serverOf(ctx);
  const floor = await startFloorServer('tail-floor-server.ts', { databaseUrl: ctx.database.url, roundTrip });
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
    return {
      ...tail,
      serverCpuSeconds: round(cpuSecondsOf(floor.pid) - cpu0, 2),
      serviceCpuSeconds: round(cpuSecondsOf(server.pid) - serviceCpu0, 2),
    };
  } finally {
    await floor.stop();
  }
}

export const tailPhase: Phase = {
  name: 'tail',
  server: 'shared',
  compares: true,
  async run(ctx) {
    const server = serverOf(ctx);
    for (const pollMs of TAIL_POLLS_MS) {
      log(
        `[${ctx.kind}] tailing: ${TAIL_CLIENTS} clients on ${INGEST_WORKSPACES} feeds polling every ${pollMs} ms, writer ${WRITER_RATE} events/s over them, ${P.tailSeconds} s…`,
      );
      const tailMemory = sampleMemory(server.pid);
      const tailCpu0 = cpuSecondsOf(server.pid);
      const tail = await tailing(ctx, server.url, pollMs, 7_000_001 + pollMs);
      const phase = tailMemory.stop();
      if (!ctx.memory.tail || phase.peakMb > (ctx.memory.tail as MemoryPhase).peakMb) ctx.memory.tail = phase;
      ctx.result[pollMs === 100 ? 'tail' : 'tailSlow'] = { ...tail, serverCpuSeconds: round(cpuSecondsOf(server.pid) - tailCpu0, 2) };
    }
    if (ctx.kind !== 'postgres') return;
    // The floor: without and then with the round trip a correct answer waits for, while the writer
    // keeps the service and the database as busy with its emits as above. --quick runs only the
    // second, which has all the floor's code, to stay short.
    const tailFloor: Record<string, unknown> = {};
    ctx.result.tailFloor = tailFloor;
    const floors = [
      ['answerOnly', false],
      ['roundTrip', true],
    ] as const;
    for (const [label, roundTrip] of quick ? floors.slice(1) : floors) {
      log(`[${ctx.kind}] tailing floor (${roundTrip ? 'a bare answer after the round trip' : 'a bare answer'}), ${P.tailSeconds} s…`);
      tailFloor[label] = await tailFloorRun(ctx, roundTrip);
    }
  },
};
