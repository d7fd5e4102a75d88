/** The ceiling: the same pages through the service's own `readPage` in a process of its own, no HTTP, no parsing. */
import { log, P } from '../config.ts';
import { medianRun, type Run } from '../context.ts';
import { runClient } from '../processes.ts';
import type { Phase } from './phase.ts';

export const ceilingPhase: Phase = {
  name: 'ceiling',
  server: 'none',
  compares: false,
  async run(ctx) {
    log(`[${ctx.kind}] ceiling (in-process readPage)…`);
    const ceiling = await runClient<{ runs: Run[]; parseMsPerPage: number }>('client-direct.ts', {
      mode: 'ceiling',
      databaseUrl: ctx.database.url,
      workspaceId: ctx.seeded.workspaceId,
      limit: 500,
      warmupPages: P.warmupPages,
      expectEvents: ctx.seeded.events,
      runs: P.replayRuns,
    });
    ctx.result.ceiling = { ...medianRun(ceiling.runs), parseMsPerPage: ceiling.parseMsPerPage };
  },
};
