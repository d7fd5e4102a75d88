/**
 * Throwaway Postgres clusters for tests and the benchmark that need a primary and streaming replicas: Debian's
 * Postgres 15 binaries, run as the `postgres` user (Postgres refuses root), in temporary folders,
 * on ports of their own; stopped and removed by `stop()`. The machine's own cluster on 5432 is left
 * alone (its pg_hba.conf has no replication line).
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './processes.ts';

const run = promisify(execFile);
const BIN = '/usr/lib/postgresql/15/bin';

/** Whether this machine can start clusters of its own (the binaries and the `postgres` user). */
export const clustersAvailable = (): boolean => existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_basebackup'));

const asPostgres = (command: string, args: string[]) =>
  run('runuser', ['-u', 'postgres', '--', join(BIN, command), ...args], { timeout: 60_000 });

export interface Cluster {
  port: number;
  dir: string;
  url(database?: string): string;
  start(): Promise<void>;
  /** `pg_ctl stop -m immediate`: as if the machine lost power. */
  stop(): Promise<void>;
}

function cluster(dir: string, port: number, settings: string[]): Cluster {
  const options = [`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', '-c fsync=off', ...settings.map((s) => `-c ${s}`)].join(' ');
  return {
    port,
    dir,
    url: (database = 'postgres') => `postgres://root@127.0.0.1:${port}/${database}`,
    start: async () => void (await asPostgres('pg_ctl', ['-D', join(dir, 'data'), '-o', options, '-l', join(dir, 'log'), '-w', 'start'])),
    stop: async () => void (await asPostgres('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop']).catch(() => {})),
  };
}

function folder(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o777); // the postgres user writes here
  return dir;
}

export interface PrimaryAndReplicas {
  primary: Cluster;
  replicas: Cluster[];
  /** Stops every cluster and removes its folder. */
  stop(): Promise<void>;
}

/**
 * A primary, then one streaming replica per entry of `replicas` (its extra settings, e.g.
 * `recovery_min_apply_delay=300ms` for one that lags on purpose), each a base backup of the primary
 * taken once `database` exists there.
 */
export async function startPrimaryAndReplicas(options: { database: string; replicas: string[][] }): Promise<PrimaryAndReplicas> {
  const started: Cluster[] = [];
  const stop = async () => {
    for (const c of started.reverse()) await c.stop();
    for (const c of started) rmSync(c.dir, { recursive: true, force: true });
  };
  try {
    const primaryDir = folder('event-feed-primary-');
    await asPostgres('initdb', ['-D', join(primaryDir, 'data'), '-A', 'trust', '-U', 'root', '--no-sync']);
    appendFileSync(join(primaryDir, 'data', 'pg_hba.conf'), '\nhost replication all 127.0.0.1/32 trust\n');
    const primary = cluster(primaryDir, await freePort(), ['wal_level=replica', 'max_wal_senders=10']);
    started.push(primary);
    await primary.start();
    await run('psql', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'root',
      '-d',
      'postgres',
      '-c',
      `CREATE DATABASE ${options.database}`,
    ]);
    const replicas: Cluster[] = [];
    for (const settings of options.replicas) {
      const dir = folder('event-feed-replica-');
      await asPostgres('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(primary.port),
        '-U',
        'root',
        '-D',
        join(dir, 'data'),
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
      ]);
      const replica = cluster(dir, await freePort(), ['hot_standby=on', ...settings]);
      started.push(replica);
      await replica.start();
      replicas.push(replica);
    }
    return { primary, replicas, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
