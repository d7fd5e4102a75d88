/**
 * What every phase is given: the seeded data (shared by both sides of a comparison), the side's own
 * database, server and results, and the helpers more than one phase uses (tailing, a floor's page).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { CursorCodec } from '../src/feed/cursor.ts';
import { feedPageJson } from '../src/feed/page.ts';
import { openStore } from '../src/store/open-store.ts';
import { P, TAIL_CLIENTS, WRITER_RATE } from './config.ts';
import { lastSeqs, type Database, type Kind } from './databases.ts';
import { runClient, type MemoryPhase, type ServerProcess } from './processes.ts';
import type { Seeded } from './seed.ts';
import { median, round } from './stats.ts';

export interface PhaseContext {
  kind: Kind;
  /** 'current': the code of this checkout; 'base': the `--against` ref's built server. */
  side: 'current' | 'base';
  /** The checkout whose `bin/event-feed.js` is started (load processes always run this checkout's bench). */
  root: string;
  database: Database;
  seeded: Seeded;
  codec: CursorCodec;
  sparseSeqs: number[];
  /** Where each restricted key's own pages of 100 start: after 0, after its 100th event, … */
  scopeBoundaries: Map<string, number[]>;
  withRedis: boolean;
  profileDir?: string;
  /** The server the 'shared' phases measure, started before the first of them and stopped after the last. */
  server?: ServerProcess;
  memory: Record<string, MemoryPhase | number>;
  result: Record<string, unknown>;
}

export type Run = {
  events: number;
  seconds: number;
  eventsPerSecond: number;
  mbPerSecond: number;
  cpuMsPerPage?: number;
  clientCpuMsPerPage?: number;
};
const medianOf = (runs: Run[], field: keyof Run) =>
  runs.every((r) => typeof r[field] === 'number') ? round(median(runs.map((r) => r[field] as number))) : undefined;
export const medianRun = (runs: Run[]) => ({
  eventsPerSecond: Math.round(median(runs.map((r) => r.eventsPerSecond))),
  mbPerSecond: round(median(runs.map((r) => r.mbPerSecond)), 1),
  cpuMsPerPage: medianOf(runs, 'cpuMsPerPage'),
  clientCpuMsPerPage: medianOf(runs, 'clientCpuMsPerPage'),
  runs,
});

/**
 * Tailing: TAIL_CLIENTS clients polling every `pollMs` from the heads of the small workspaces
 * (client i tails workspace i % 100), while a writer emits WRITER_RATE events/s over them;
 * every client must end with exactly the events written to its workspace.
 */
export async function tailing(ctx: PhaseContext, url: string, pollMs: number, seedChunk: number) {
  const { seeded, codec } = ctx;
  const heads = await lastSeqs(
    ctx.database.url,
    seeded.ingest.map((w) => w.workspaceId),
  );
  const tailClients = Array.from({ length: TAIL_CLIENTS }, (_, i) => {
    const ws = seeded.ingest[i % seeded.ingest.length]!;
    return {
      key: ws.readKeys[Math.floor(i / seeded.ingest.length)]!,
      cursor: codec.encode(ws.workspaceId, heads.get(ws.workspaceId) ?? 0),
    };
  });
  const tailWarmup = Math.min(3, P.tailSeconds * 0.2);
  // The tailing clients finish once the writer has stopped (they are told on stdin): a writer
  // process that started late would otherwise still emit while the clients finish.
  let tailProcess: ChildProcess | undefined;
  const [tail, tailWriter] = await Promise.all([
    runClient<Record<string, any>>(
      'client-http.ts',
      {
        mode: 'tail',
        url,
        clients: tailClients,
        pollMs,
        seconds: P.tailSeconds,
        warmupSeconds: tailWarmup,
        limit: 100,
        drainSeconds: P.tailDrain,
        drainOnStdin: true,
      },
      { onStart: (child) => (tailProcess = child) },
    ),
    runClient<Record<string, any>>('client-http.ts', {
      mode: 'writer',
      url,
      keys: seeded.ingest.map((w) => w.writeKey),
      rate: WRITER_RATE,
      seconds: P.tailSeconds + tailWarmup + 0.5,
      seedChunk,
    }).finally(() => tailProcess?.stdin?.end('drain\n')),
  ]);
  const undelivered = tailClients.filter((_, i) => tail.received[i] !== tailWriter.okPerKey[i % seeded.ingest.length]).length;
  delete tail.received;
  delete tailWriter.okPerKey;
  return { ...tail, writer: tailWriter, clientsMissingEvents: undelivered, allDelivered: undelivered === 0 };
}

/** One real page of 500 from the middle of the measured workspace, encoded as the service answers it, in a file of its own. */
export async function floorPageFile(ctx: PhaseContext): Promise<string> {
  const { seeded, codec } = ctx;
  const pageFile = join(mkdtempSync(join(tmpdir(), 'event-feed-bench-page-')), 'page.json');
  const readDb = openStore(ctx.database.url);
  try {
    // The rows, not readPage: its read-ahead of the next page would still be waiting for a
    // connection when readDb is destroyed (knex then warns "Acquire connection error" 5 s later).
    const rows = await readDb.readPageRows({
      workspaceId: seeded.workspaceId,
      afterSeq: Math.floor(seeded.lastSeq / 2),
      limit: 500,
      mailboxes: null,
    });
    const page = {
      bytes: Buffer.from(rows.map((row) => row.envelope).join(',')),
      count: rows.length,
      lastSeq: rows.at(-1)!.seq,
      cutAtByteCap: false,
    };
    writeFileSync(
      pageFile,
      Buffer.concat(feedPageJson({ events: page, next_cursor: codec.encode(seeded.workspaceId, Number(page.lastSeq)) })),
    );
  } finally {
    await readDb.close();
  }
  return pageFile;
}

/** The shared server, which a 'shared' phase may count on. */
export function serverOf(ctx: PhaseContext): ServerProcess {
  if (!ctx.server) throw new Error(`[${ctx.kind}] no shared server started for this phase`);
  return ctx.server;
}
