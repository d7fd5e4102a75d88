/** Read replicas (`replicasPhase`): a primary and a streaming replica of its own, at most 200,000 events. */
import { events, log, P } from '../config.ts';
import { clustersAvailable } from '../pg-cluster.ts';
import { replicasPhase as measureReplicas } from '../replicas-phase.ts';
import type { Phase } from './phase.ts';

export const replicasPhase: Phase = {
  name: 'replicas',
  server: 'own',
  compares: true,
  only: 'postgres',
  async run(ctx) {
    // The seed and the replica's catch-up take time: at most 200,000 events.
    ctx.result.replicas = clustersAvailable()
      ? await measureReplicas({
          events: Math.min(events, 200_000),
          seconds: P.fanoutSeconds,
          warmupSeconds: P.fanoutWarmup,
          root: ctx.root,
          log,
        })
      : { skipped: 'no Postgres 15 binaries to start a primary and a replica' };
  },
};
