/**
 * The phases table: every phase of the bench, in the order each database's run takes them.
 * Adding a phase is one module exporting a `Phase` and one line here; `--phases` selects by name.
 */
import { ceilingPhase } from './ceiling.ts';
import { depthPhase } from './depth.ts';
import { erasureBenchPhase } from './erasure.ts';
import { ingestPhase } from './ingest.ts';
import { longpollPhase } from './longpoll.ts';
import { mcpPhase } from './mcp.ts';
import { partitionsPhase } from './partitions.ts';
import type { Phase } from './phase.ts';
import { redisPhase } from './redis.ts';
import { replayPhase } from './replay.ts';
import { replicasPhase } from './replicas.ts';
import { sparsePhase } from './sparse.ts';
import { tailPhase } from './tail.ts';
import { tracingBenchPhase } from './tracing.ts';
import { webhooksPhase } from './webhooks.ts';
import { workersPhase } from './workers.ts';

export type { Phase } from './phase.ts';

export const PHASES: readonly Phase[] = [
  redisPhase,
  ceilingPhase,
  replayPhase,
  depthPhase,
  sparsePhase,
  mcpPhase,
  tailPhase,
  ingestPhase,
  workersPhase,
  longpollPhase,
  replicasPhase,
  partitionsPhase,
  webhooksPhase,
  tracingBenchPhase,
  erasureBenchPhase,
];

/** The phases `--phases` names (`all`: every one), in the table's order; an unknown name is an error. */
export function selectPhases(list: string): Phase[] {
  if (list === 'all') return [...PHASES];
  const names = new Set(
    list
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
  );
  const unknown = [...names].filter((name) => !PHASES.some((phase) => phase.name === name));
  if (unknown.length > 0) throw new Error(`--phases: unknown ${unknown.join(', ')}; known: ${PHASES.map((p) => p.name).join(', ')}`);
  return PHASES.filter((phase) => names.has(phase.name));
}
