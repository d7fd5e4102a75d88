/**
 * Phase 11, replicas (Postgres): what a read replica takes off the primary. A primary and one
 * streaming replica of its own (startPrimaryAndReplicas: Debian's binaries, fsync off in both), seeded
 * with the measured workspace; then, once against a service on the primary alone and once with
 * DATABASE_READ_URLS naming the replica: 8 catch-up readers replaying at once (client-http.ts
 * fanout) while 16 writers emit (ingest mode), for the same time. Reported: the readers' and the
 * writers' throughput, and the CPU of the primary's processes (its postmaster's process tree) and
 * of the replica's, per second and per 1,000 events served to the readers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CursorCodec } from '../src/feed/cursor.ts';
import { openStore } from '../src/store/open-store.ts';
import { startPrimaryAndReplicas, type Cluster } from './pg-cluster.ts';
import { cpuSecondsOf, runClient, startServer, treeCpuSecondsOf } from './processes.ts';
import { seed } from './seed.ts';
import { round } from './stats.ts';

const READERS = 8;
const WRITERS = 16;
const WRITE_WORKSPACES = 16;

const postmasterPid = (cluster: Cluster) => Number(readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n', 1)[0]);

export async function replicasPhase(o: {
  events: number;
  seconds: number;
  warmupSeconds: number;
  root?: string;
  log: (line: string) => void;
}) {
  const clusters = await startPrimaryAndReplicas({ database: 'bench', replicas: [[]] });
  try {
    const [replica] = clusters.replicas;
    const primaryUrl = clusters.primary.url('bench');
    const replicaUrl = replica!.url('bench');
    const store = openStore(primaryUrl);
    let seeded;
    let codec: CursorCodec;
    try {
      await store.migrate();
      codec = new CursorCodec(await store.sharedCursorSecret());
      o.log(`[replicas] seeding ${o.events.toLocaleString('en')} events on a primary of its own…`);
      seeded = await seed(store, { events: o.events, ingestWorkspaces: WRITE_WORKSPACES, readKeysPerWorkspace: 1, log: o.log });
      await store.knex.raw('analyze');
    } finally {
      await store.close();
    }
    // The replica has everything before the measurement starts.
    const replicaStore = openStore(replicaUrl);
    try {
      for (const deadline = Date.now() + 120_000; ;) {
        if ((await replicaStore.feedHead(seeded.workspaceId)) >= seeded.lastSeq) break;
        if (Date.now() > deadline) throw new Error('the replica did not catch up with the seed in 2 minutes');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await replicaStore.close();
    }
    const starts = Array.from({ length: READERS }, (_, i) => codec.encode(seeded.workspaceId, Math.floor((i * seeded.lastSeq) / READERS)));
    const primaryPid = postmasterPid(clusters.primary);
    const replicaPid = postmasterPid(replica!);
    // Scans of `events` on the replica, from its own statistics (they reach the view within a second): whether it served.
    const replicaScans = async () => {
      const db = openStore(replicaUrl);
      try {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        return Number(
          (
            await db.knex.raw(
              "SELECT coalesce(sum(idx_scan + seq_scan), 0) AS n FROM pg_stat_user_tables WHERE relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass)",
            )
          ).rows[0].n,
        );
      } finally {
        await db.close();
      }
    };
    const runs: Record<string, unknown> = {};
    for (const withReplica of [false, true]) {
      o.log(
        `[replicas] ${READERS} catch-up readers while ${WRITERS} writers emit, ${withReplica ? 'with the replica' : 'primary alone'}, ${o.seconds} s…`,
      );
      const server = await startServer(primaryUrl, { env: withReplica ? { DATABASE_READ_URLS: replicaUrl } : {}, root: o.root });
      try {
        if (withReplica) {
          for (const deadline = Date.now() + 15_000; ;) {
            const body = (await (await fetch(`${server.url}/readyz`)).json()) as { replicas?: Array<{ serving: boolean }> };
            if (body.replicas?.[0]?.serving) break;
            if (Date.now() > deadline) throw new Error('the replica never served');
            await new Promise((resolve) => setTimeout(resolve, 200));
          }
        }
        const scans0 = await replicaScans();
        const cpu0 = { primary: treeCpuSecondsOf(primaryPid), replica: treeCpuSecondsOf(replicaPid), service: cpuSecondsOf(server.pid) };
        const t0 = performance.now();
        const [readers, writers] = await Promise.all([
          runClient<Record<string, any>>('client-http.ts', {
            mode: 'fanout',
            url: server.url,
            key: seeded.keys.read,
            starts,
            seconds: o.seconds,
            warmupSeconds: o.warmupSeconds,
            limit: 500,
          }),
          runClient<Record<string, any>>('client-http.ts', {
            mode: 'ingest',
            url: server.url,
            keys: seeded.ingest.map((w) => w.writeKey),
            concurrency: WRITERS,
            seconds: o.seconds,
            warmupSeconds: o.warmupSeconds,
            seedChunk: 7_000_021 + Number(withReplica),
          }),
        ]);
        const wall = (performance.now() - t0) / 1000;
        const primaryCpu = treeCpuSecondsOf(primaryPid) - cpu0.primary;
        const replicaCpu = treeCpuSecondsOf(replicaPid) - cpu0.replica;
        // Warm-up included in the CPU: per event served, over every event the readers got in the whole run.
        const servedPerSecond = readers.eventsPerSecond as number;
        runs[withReplica ? 'withReplica' : 'primaryAlone'] = {
          readers: { eventsPerSecond: readers.eventsPerSecond, pageMs: readers.pageMs },
          writers: { eventsPerSecond: writers.eventsPerSecond, errors: writers.errors, latency: writers.latency },
          primaryCpuPerSecond: round(primaryCpu / wall, 2),
          replicaCpuPerSecond: round(replicaCpu / wall, 2),
          serviceCpuPerSecond: round((cpuSecondsOf(server.pid) - cpu0.service) / wall, 2),
          primaryCpuMsPer1000EventsServed: round(((primaryCpu / wall) * 1_000_000) / Math.max(1, servedPerSecond), 2),
          replicaScans: (await replicaScans()) - scans0,
        };
      } finally {
        await server.stop();
      }
    }
    return { events: seeded.events, readers: READERS, writers: WRITERS, ...runs };
  } finally {
    await clusters.stop();
  }
}
