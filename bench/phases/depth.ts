/** Depth: one page of 100 after seq 0, N/2 and N−100 (interleaved) over HTTP, and `readPage` alone at the same places. */
import { log, P } from '../config.ts';
import { serverOf } from '../context.ts';
import { runClient } from '../processes.ts';
import { round, type Latency } from '../stats.ts';
import type { Phase } from './phase.ts';

export const depthPhase: Phase = {
  name: 'depth',
  server: 'shared',
  compares: true,
  async run(ctx) {
    const { seeded, codec } = ctx;
    log(`[${ctx.kind}] depth…`);
    const N = seeded.lastSeq;
    const depthCursors = { start: 0, middle: Math.floor(N / 2), end: N - 100 };
    const depthProbes = Object.entries(depthCursors).map(([label, afterSeq]) => ({
      label,
      via: 'http',
      key: seeded.keys.read,
      args: { after: codec.encode(seeded.workspaceId, afterSeq), limit: 100 },
    }));
    const depthHttp = await runClient<Record<string, Latency>>('client-http.ts', {
      mode: 'probe',
      url: serverOf(ctx).url,
      probes: depthProbes,
      rounds: P.depthRounds,
      warmupRounds: 20,
    });
    const depthDb = await runClient<Record<string, Latency>>('client-direct.ts', {
      mode: 'dbprobe',
      databaseUrl: ctx.database.url,
      workspaceId: seeded.workspaceId,
      rounds: P.depthRounds,
      warmupRounds: 20,
      probes: Object.entries(depthCursors).map(([label, afterSeq]) => ({ label, afterSeq, mailboxes: null, limit: 100 })),
    });
    ctx.result.depth = {
      positions: depthCursors,
      http: depthHttp,
      db: depthDb,
      endOverStart: round(depthHttp.end!.p50 / depthHttp.start!.p50, 2),
    };
  },
};
