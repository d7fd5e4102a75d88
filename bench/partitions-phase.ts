/**
 * Phase 12, partitions (Postgres): what weekly partitions cost reads, and what they save pruning.
 * One database is seeded with the measured workspace's events stored over the last 30 days (so
 * they spread over the partitions a 30-day retention keeps), then copied (CREATE DATABASE …
 * TEMPLATE) and, in the copy, `events` rebuilt as one plain table with the indexes it had before
 * partitioning: the same rows, keys and cursor secret. A service on each, alternately, twice:
 * a whole replay by the unrestricted key and by keys of 1 and 10 mailboxes (client-http.ts
 * replay, pages of 500). Reported: the page time of each, and partitioned ÷ plain.
 * Then the retention of the oldest week: dropped from the partitioned database (prunePartitions)
 * against the same events deleted row by row from the plain copy (pruneAll), each
 * with its time and the WAL it wrote.
 */
import knexFactory from 'knex';
import { pruneAll } from '../src/store/common/retention.ts';
import { kindNamed, openStore } from '../src/store/open-store.ts';
import { prunePartitions } from '../src/store/postgres/partition-pruning.ts';
import { listPartitions } from '../src/store/postgres/partitions.ts';
import { runClient, startServer } from './processes.ts';
import { seed } from './seed.ts';
import { median, round } from './stats.ts';

const RETENTION_DAYS = 30;

export async function partitionsPhase(o: { adminUrl: string; runId: string; events: number; root?: string; log: (line: string) => void }) {
  const names = { partitioned: `event_feed_bench_${o.runId}_parts`, plain: `event_feed_bench_${o.runId}_plain` };
  const urlOf = (name: string) => Object.assign(new URL(o.adminUrl), { pathname: `/${name}` }).toString();
  const admin = knexFactory({ client: 'pg', connection: o.adminUrl });
  try {
    await admin.raw(`CREATE DATABASE ${names.partitioned}`);
    const store = openStore(urlOf(names.partitioned), { queryTimeoutMs: 0 });
    let seeded;
    try {
      await store.migrate();
      o.log(`[partitions] seeding ${o.events.toLocaleString('en')} events stored over ${RETENTION_DAYS} days…`);
      seeded = await seed(store, {
        events: o.events,
        ingestWorkspaces: 0,
        readKeysPerWorkspace: 0,
        storedOverDays: RETENTION_DAYS,
        log: o.log,
      });
      await store.knex.raw('ANALYZE');
    } finally {
      await store.close();
    }
    o.log('[partitions] copying it with events as one plain table…');
    await admin.raw(`CREATE DATABASE ${names.plain} TEMPLATE ${names.partitioned}`);
    await rebuildUnpartitioned(urlOf(names.plain));

    const counts = await mailboxCounts(urlOf(names.partitioned), seeded.workspaceId, seeded.scopes);
    const readers = [
      { label: 'whole feed', key: seeded.keys.read, events: seeded.events },
      ...seeded.scopes.filter((s) => s.label !== '50 mailboxes').map((s) => ({ label: s.label, key: s.key, events: counts.get(s.label)! })),
    ];
    const pageMs: Record<string, Record<string, number[]>> = { partitioned: {}, plain: {} };
    for (let round = 0; round < 2; round++) {
      for (const layout of ['plain', 'partitioned'] as const) {
        const server = await startServer(urlOf(names[layout]), { root: o.root });
        try {
          for (const reader of readers) {
            o.log(`[partitions] ${layout}: replay by ${reader.label} (${reader.events.toLocaleString('en')} events), round ${round + 1}…`);
            const run = await runClient<{ pageMs: { p50: number; mean: number } }>('client-http.ts', {
              mode: 'replay',
              url: server.url,
              key: reader.key,
              limit: 500,
              warmupPages: 20,
              expectEvents: reader.events,
            });
            (pageMs[layout]![reader.label] ??= []).push(run.pageMs.mean);
          }
        } finally {
          await server.stop();
        }
      }
    }
    const partitions = (await withKnex(urlOf(names.partitioned), listPartitions)).length;
    const reads = Object.fromEntries(
      readers.map((r) => {
        const plain = median(pageMs.plain![r.label]!);
        const partitioned = median(pageMs.partitioned![r.label]!);
        return [
          r.label,
          {
            events: r.events,
            plainPageMs: round(plain, 2),
            partitionedPageMs: round(partitioned, 2),
            ratio: round(partitioned / plain, 2),
          },
        ];
      }),
    );

    o.log('[partitions] pruning the oldest week: a partition dropped, and the same rows deleted…');
    const oldest = (await withKnex(urlOf(names.partitioned), listPartitions))[0]!;
    const drop = await measured(urlOf(names.partitioned), (knex) => prunePartitions(knex, oldest.to, 1000));
    const del = await measured(urlOf(names.plain), (knex) => pruneAll(knex, kindNamed('postgres').sql, oldest.to, 1000));
    return {
      events: seeded.events,
      partitions,
      reads,
      prune: {
        week: { from: new Date(oldest.from).toISOString(), to: new Date(oldest.to).toISOString() },
        dropped: { events: drop.deleted, seconds: drop.seconds, walBytes: drop.walBytes },
        deleted: { events: del.deleted, seconds: del.seconds, walBytes: del.walBytes },
      },
    };
  } finally {
    for (const name of Object.values(names)) await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.destroy();
  }
}

/** `events` as it was before migration 009: one table, its unique keys and indexes. */
async function rebuildUnpartitioned(url: string) {
  await withKnex(url, async (knex) => {
    await knex.raw('CREATE TABLE events_plain (LIKE events INCLUDING DEFAULTS)');
    await knex.raw('INSERT INTO events_plain SELECT * FROM events ORDER BY workspace_id, seq');
    await knex.raw('ALTER TABLE events_plain ADD PRIMARY KEY (workspace_id, seq)');
    await knex.raw('ALTER TABLE events_plain ADD UNIQUE (workspace_id, id)');
    await knex.raw('CREATE INDEX ON events_plain (workspace_id, mailbox_id, seq)');
    await knex.raw('CREATE INDEX ON events_plain (workspace_id, type, seq)');
    await knex.raw('CREATE INDEX ON events_plain (workspace_id, occurred_at_ms, seq)');
    await knex.raw('DROP TABLE events');
    await knex.raw('ALTER TABLE events_plain RENAME TO events');
    await knex.raw('VACUUM ANALYZE events');
  });
}

async function mailboxCounts(url: string, workspaceId: string, scopes: Array<{ label: string; mailboxes: string[] }>) {
  return withKnex(url, async (knex) => {
    const counts = new Map<string, number>();
    for (const scope of scopes) {
      const row = await knex('events')
        .where({ workspace_id: workspaceId })
        .whereIn('mailbox_id', scope.mailboxes)
        .count({ n: '*' })
        .first();
      counts.set(scope.label, Number(row!.n));
    }
    return counts;
  });
}

/** A prune's events, time and WAL (the whole cluster's meanwhile: nothing else writes then). */
async function measured(url: string, prune: (knex: knexFactory.Knex) => Promise<Array<{ deleted: number }>>) {
  return withKnex(url, async (knex) => {
    const lsn = async () => (await knex.raw('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn as string;
    // As in steady state, the first change to each page after a checkpoint logs the whole page.
    await knex.raw('CHECKPOINT');
    const start = await lsn();
    const t0 = performance.now();
    const results = await prune(knex);
    const seconds = (performance.now() - t0) / 1000;
    const walBytes = Number((await knex.raw('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), ?::pg_lsn) AS b', [start])).rows[0].b);
    return { deleted: results.reduce((n, r) => n + r.deleted, 0), seconds: round(seconds, 2), walBytes };
  });
}

async function withKnex<T>(url: string, work: (knex: knexFactory.Knex) => Promise<T>): Promise<T> {
  const knex = knexFactory({ client: 'pg', connection: url });
  try {
    return await work(knex);
  } finally {
    await knex.destroy();
  }
}
