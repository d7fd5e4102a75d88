import cluster from 'node:cluster';
import { systemClock } from '../base/clock.ts';
import type { Config } from '../app/config.ts';
import { createLogger } from '../base/log.ts';
import { traceLogFields } from '../tracing/log-fields.ts';
import { tracingWanted } from '../tracing/settings.ts';
import { migrateDatabase } from '../store/migrate-database.ts';
import { openStore } from '../store/open-store.ts';
import { superviseWorkers } from './workers.ts';

/**
 * `event-feed serve`: one process serving the port, or with `workers` > 1 a primary that migrates
 * the database, seeds the demo, then forks that many workers (superviseWorkers), each of which comes back
 * here as a worker and serves like a single process (without migrating or seeding again).
 * SIGTERM or SIGINT drains and stops, however many processes serve.
 */
export async function serve(config: Config, options: { seedDemo?: boolean; workers: number }): Promise<void> {
  if (cluster.isPrimary && options.workers > 1) return servePrimary(config, options.workers, options.seedDemo === true);
  // With tracing asked for (the standard OTEL_* variables), each line written within a span carries its ids.
  const traced = tracingWanted(process.env) ? traceLogFields : undefined;
  const log = createLogger(config.logLevel, cluster.isWorker ? { worker: cluster.worker!.id } : undefined, traced);
  // Loaded here, not at the top: the primary of `serve --workers` never serves, and stays small without it.
  const { startServer } = await import('../server.ts');
  // A worker counts; its primary serves the metrics of all (workersExposition).
  const running = await startServer(config, log, {
    seedDemo: cluster.isPrimary && options.seedDemo,
    metrics: cluster.isWorker ? 'primary' : 'listen',
  });
  // Once, whichever comes first: under a terminal a worker gets the SIGINT of Ctrl-C and then its primary's SIGTERM.
  let closing: Promise<void> | undefined;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      closing ??= (async () => {
        log.info({ signal }, 'shutting down');
        await running.close();
        process.exit(0);
      })();
    });
  }
}

async function servePrimary(config: Config, workers: number, seedDemo: boolean): Promise<void> {
  const log = createLogger(config.logLevel, { role: 'primary' });
  await migrateDatabase(config.databaseUrl, log);
  const { demoAtStart, demoBanner } = await import('../demo/demo-start.ts');
  let demo;
  if (seedDemo) {
    const store = openStore(config.databaseUrl);
    try {
      demo = await demoAtStart(store, systemClock, config.databaseUrl);
    } finally {
      await store.close();
    }
  }
  if (config.metricsPort !== undefined) {
    // Before any fork: a port taken fails the start alone. Loaded only when asked for, like the
    // server itself: the primary stays small without them.
    const { listenForScrapes } = await import('../metrics/listener.ts');
    const { workersExposition } = await import('../metrics/cluster.ts');
    await listenForScrapes(config.metricsHost, config.metricsPort, workersExposition(), log);
  }
  const supervision = superviseWorkers(config, workers, log);
  let stopping: Promise<void> | undefined;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      stopping ??= (async () => {
        log.info({ signal, workers }, 'shutting down every worker');
        await supervision.stop();
        process.exit(0);
      })();
    });
  }
  void supervision.failed.then((code) => process.exit(code));
  const url = await supervision.listening;
  log.info({ url, workers }, 'event-feed listening with workers');
  if (demo) process.stdout.write(demoBanner(url, demo));
}
