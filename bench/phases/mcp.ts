/** MCP: `tools/call event_feed {limit:100}` against `POST /v1/event_feed {limit:100}`, interleaved rounds. */
import { log, P } from '../config.ts';
import { serverOf } from '../context.ts';
import { runClient } from '../processes.ts';
import { round, type Latency } from '../stats.ts';
import type { Phase } from './phase.ts';

export const mcpPhase: Phase = {
  name: 'mcp',
  server: 'shared',
  compares: true,
  async run(ctx) {
    log(`[${ctx.kind}] MCP vs HTTP…`);
    const key = ctx.seeded.keys.read;
    const mcp = await runClient<Record<string, Latency>>('client-http.ts', {
      mode: 'probe',
      url: serverOf(ctx).url,
      probes: [
        { label: 'http', via: 'http', key, args: { limit: 100 } },
        { label: 'mcp', via: 'mcp', key, args: { limit: 100 } },
      ],
      rounds: P.mcpRounds,
      warmupRounds: 20,
    });
    ctx.result.mcp = { ...mcp, overheadMs: round(mcp.mcp!.p50 - mcp.http!.p50, 3), ratio: round(mcp.mcp!.p50 / mcp.http!.p50, 2) };
  },
};
