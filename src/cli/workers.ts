import cluster, { type Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';
import type { Config } from '../app/config.ts';
import type { Logger } from '../base/log.ts';

/** How long a worker that was asked to stop may take (its own grace is SHUTDOWN_GRACE_MS of startServer): then it is killed. */
const STOP_DEADLINE_MS = 20_000;
/** Workers that die before they listen, one after another: past this the start itself is failing, and the service stops. */
const MAX_FAILED_STARTS = 3;

export interface Supervision {
  /** The address the workers share, once the first one listens. */
  listening: Promise<string>;
  /** Asks every worker to stop (each drains as a single process does) and resolves once all have exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Resolves with the exit code the primary should end with, when it ends on its own (its workers could not start). */
  failed: Promise<number>;
}

/**
 * The primary of `serve --workers N`: forks N copies of this process (node:cluster), which each run
 * the whole service, as N instances on one database would, and share the port: each worker accepts
 * its connections itself from the one listening socket (cluster.SCHED_NONE: the kernel balances
 * them), and the primary serves nothing and holds no connection. With the primary handing accepted
 * sockets to workers in turn (Node's default on Linux), a socket handed to a worker that died on
 * the way was never answered nor closed: its client hung, and the primary kept it in CLOSE-WAIT.
 * Now a dying worker takes only its own connections with it, which the kernel closes. What instances on
 * one database already keep right across processes keeps it right across workers: SQLite's
 * readers see other processes' commits in the file's version (OthersWrites), Postgres
 * instances hear every commit and key change on a channel, webhooks are leased, migrations and
 * the cursor secret go through the database.
 *
 * A worker that dies is logged and replaced. Workers that die before they listen, MAX_FAILED_STARTS
 * times in a row, mean the start fails (a port taken, a database refused): the others are stopped
 * and `failed` resolves with 1, rather than forking forever.
 */
export function superviseWorkers(config: Config, count: number, log: Logger): Supervision {
  // Read by the first fork: the workers accept from the shared socket themselves.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  let stopping = false;
  let failedStarts = 0;
  const listeningWorkers = new WeakSet<Worker>();
  let announce: (url: string) => void;
  const listening = new Promise<string>((resolve) => (announce = resolve));
  let fail: (code: number) => void;
  const failed = new Promise<number>((resolve) => (fail = resolve));

  const fork = () => {
    const worker = cluster.fork();
    worker.once('listening', (address: AddressInfo) => {
      listeningWorkers.add(worker);
      failedStarts = 0;
      log.info({ worker: worker.id, pid: worker.process.pid }, 'worker listening');
      announce(`http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${address.port}`);
    });
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      const started = listeningWorkers.has(worker);
      log.error(
        { worker: worker.id, pid: worker.process.pid, code, signal },
        started ? 'a worker died: starting another' : 'a worker died before it listened',
      );
      if (!started && ++failedStarts >= MAX_FAILED_STARTS) {
        log.error({ failed_starts: failedStarts }, 'workers cannot start: stopping');
        void stop('SIGTERM').then(() => fail(1));
        return;
      }
      fork();
    });
  };

  const stop = (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    stopping = true;
    const live = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined && !worker.isDead());
    return Promise.all(
      live.map(
        (worker) =>
          new Promise<void>((done) => {
            const deadline = setTimeout(() => worker.process.kill('SIGKILL'), STOP_DEADLINE_MS);
            worker.once('exit', () => {
              clearTimeout(deadline);
              done();
            });
            worker.process.kill(signal);
          }),
      ),
    ).then(() => undefined);
  };

  for (let i = 0; i < count; i++) fork();
  return { listening, stop, failed };
}
