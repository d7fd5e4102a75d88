/** The databases a run measures: reachability, a fresh one per kind, a copy of a seeded one, and readings of their counters. */
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import knexFactory from 'knex';
import { openStore } from '../src/store/open-store.ts';
import { log, POSTGRES_ADMIN_URL, REDIS_URL, runId } from './config.ts';

export type Kind = 'sqlite' | 'postgres';

export interface Database {
  kind: Kind;
  url: string;
  drop(): Promise<void>;
}

/** undefined when reachable, else why not (and under CI=true an unreachable one fails the run). */
export async function reachable(kind: 'postgres' | 'redis'): Promise<string | undefined> {
  try {
    if (kind === 'postgres') {
      const admin = knexFactory({ client: 'pg', connection: { connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 2000 } });
      try {
        await admin.raw('select 1');
      } finally {
        await admin.destroy();
      }
    } else {
      const r = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
      try {
        await r.connect();
        await r.ping();
      } finally {
        r.disconnect();
      }
    }
    return undefined;
  } catch (err) {
    const reason = `${kind} unreachable (${kind === 'postgres' ? POSTGRES_ADMIN_URL : REDIS_URL}): ${(err as Error).message}`;
    if (['true', '1'].includes((process.env.CI ?? '').toLowerCase())) throw new Error(`CI=true but ${reason}`);
    log(`\n*** ${reason}: its part of the benchmark is SKIPPED ***\n`);
    return reason;
  }
}

const postgresUrlOf = (name: string) => Object.assign(new URL(POSTGRES_ADMIN_URL), { pathname: `/${name}` }).toString();

async function adminRaw(sql: string): Promise<void> {
  const admin = knexFactory({ client: 'pg', connection: POSTGRES_ADMIN_URL });
  try {
    await admin.raw(sql);
  } finally {
    await admin.destroy();
  }
}

function postgresDatabase(name: string): Database {
  return { kind: 'postgres', url: postgresUrlOf(name), drop: () => adminRaw(`drop database if exists ${name} with (force)`) };
}

/** An empty database of this kind (a SQLite file in a temporary folder, or `event_feed_bench_<run>` on Postgres). */
export async function createDatabase(kind: Kind): Promise<Database> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'event-feed-bench-'));
    return { kind, url: `sqlite:${join(dir, 'bench.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `event_feed_bench_${runId}`;
  await adminRaw(`create database ${name}`);
  return postgresDatabase(name);
}

/**
 * A copy of a seeded database nobody is connected to (its file, or `CREATE DATABASE … TEMPLATE`):
 * the same rows, keys and cursor secret, for the base's server under `--against`.
 */
export async function copyDatabase(source: Database, suffix: string): Promise<Database> {
  if (source.kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `event-feed-bench-${suffix}-`));
    const from = source.url.slice('sqlite:'.length);
    const to = join(dir, 'bench.sqlite');
    for (const tail of ['', '-wal', '-shm']) if (existsSync(from + tail)) copyFileSync(from + tail, to + tail);
    return { kind: 'sqlite', url: `sqlite:${to}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `event_feed_bench_${runId}_${suffix}`;
  const sourceName = new URL(source.url).pathname.slice(1);
  await adminRaw(`create database ${name} template ${sourceName}`);
  return postgresDatabase(name);
}

export interface WalStats {
  bytes: number;
  fpi: number;
}

/** The server's WAL counters (pg_stat_wal, the whole server); backends report theirs within a second, so this waits that long first. */
export async function walStats(url: string): Promise<WalStats> {
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const db = openStore(url);
  try {
    const { rows } = await db.knex.raw('SELECT wal_bytes, wal_fpi FROM pg_stat_wal');
    return { bytes: Number(rows[0].wal_bytes), fpi: Number(rows[0].wal_fpi) };
  } finally {
    await db.close();
  }
}
export const walDelta = (a: WalStats, b: WalStats): WalStats => ({ bytes: b.bytes - a.bytes, fpi: b.fpi - a.fpi });

/** The last seq of each of these workspaces now (0 for an empty feed). */
export async function lastSeqs(url: string, workspaceIds: string[]): Promise<Map<string, number>> {
  const db = openStore(url);
  try {
    const rows = await db.knex('feed_counters').select('workspace_id', 'last_seq').whereIn('workspace_id', workspaceIds);
    return new Map(rows.map((r: { workspace_id: string; last_seq: number }) => [r.workspace_id, Number(r.last_seq)]));
  } finally {
    await db.close();
  }
}
