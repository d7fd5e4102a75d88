/** Time partitions (`partitionsPhase`): reads over weekly partitions against one plain table, and pruning a week both ways. */
import { events, log, POSTGRES_ADMIN_URL, runId } from '../config.ts';
import { partitionsPhase as measurePartitions } from '../partitions-phase.ts';
import type { Phase } from './phase.ts';

export const partitionsPhase: Phase = {
  name: 'partitions',
  server: 'own',
  compares: true,
  only: 'postgres',
  async run(ctx) {
    log('[postgres] partitions: reads over weekly partitions against one plain table, and pruning a week both ways…');
    ctx.result.partitions = await measurePartitions({
      adminUrl: POSTGRES_ADMIN_URL,
      runId: ctx.side === 'base' ? `${runId}_base` : runId,
      events,
      root: ctx.root,
      log,
    });
  },
};
