/** Sparse scope: keys restricted to the 2 sparse mailboxes, and to 1, 10 and 50, each against the unrestricted page at its own page boundaries. */
import { log, P } from '../config.ts';
import { serverOf, type PhaseContext } from '../context.ts';
import { runClient } from '../processes.ts';
import { round, type Latency } from '../stats.ts';
import type { Phase } from './phase.ts';

type Probed = Record<string, Latency & { eventsPerPage: number }>;

/** Up to 6 of these positions, spread over them. */
const spread = (bounds: number[]) => bounds.filter((_, i) => i % Math.max(1, Math.ceil(bounds.length / 6)) === 0).slice(0, 6);

/** Pages of 100 by `key` (as `label`) and by the unrestricted key, from the same positions, interleaved. */
function probe(ctx: PhaseContext, label: string, key: string, positions: number[]): Promise<Probed> {
  const { seeded, codec } = ctx;
  const probes = positions.flatMap((afterSeq) => [
    { label, via: 'http', key, args: { after: codec.encode(seeded.workspaceId, afterSeq), limit: 100 } },
    { label: 'unrestricted', via: 'http', key: seeded.keys.read, args: { after: codec.encode(seeded.workspaceId, afterSeq), limit: 100 } },
  ]);
  return runClient<Probed>('client-http.ts', {
    mode: 'probe',
    url: serverOf(ctx).url,
    probes,
    rounds: P.sparseRounds,
    warmupRounds: 5,
  });
}

export const sparsePhase: Phase = {
  name: 'sparse',
  server: 'shared',
  compares: true,
  async run(ctx) {
    const { seeded, sparseSeqs } = ctx;
    log(`[${ctx.kind}] sparse scope…`);
    // The positions a sparse reader's pages start from: its own page boundaries (after 0, after its 100th event, …).
    const pick = spread([0, ...sparseSeqs.filter((_, i) => (i + 1) % 100 === 0)]);
    const sparseHttp = await probe(ctx, 'sparse', seeded.keys.sparse, pick);
    const scopes: Record<string, { http: Probed; ratio: number }> = {};
    for (const scope of seeded.scopes) {
      const http = await probe(ctx, 'scoped', scope.key, spread(ctx.scopeBoundaries.get(scope.label)!));
      scopes[scope.label] = { http, ratio: round(http.scoped!.p50 / http.unrestricted!.p50, 2) };
    }
    ctx.result.sparse = {
      sparseEvents: sparseSeqs.length,
      share: round(sparseSeqs.length / seeded.events, 5),
      positions: pick,
      http: sparseHttp,
      ratio: round(sparseHttp.sparse!.p50 / sparseHttp.unrestricted!.p50, 2),
      scopes,
    };
  },
};
