import type { Config } from './config.ts';
import type { Logger } from '../base/log.ts';
import { safeErrorFields } from '../base/log.ts';
import type { Services } from '../operations/context.ts';

const DAY_MS = 24 * 3600 * 1000;

/** Deletes what is older than the retention period, for every workspace, now. */
export async function pruneExpired(services: Services, config: Pick<Config, 'retentionDays' | 'pruneBatchSize'>) {
  const cutoff = services.clock.now().getTime() - config.retentionDays * DAY_MS;
  return services.store.pruneAll(cutoff, config.pruneBatchSize);
}

/** Prunes on a timer inside the server (never with an interval of 0); one run at a time; stops with `stop()`. */
export function schedulePruning(services: Services, config: Config, log: Logger): { stop(): Promise<void> } {
  if (config.pruneIntervalSeconds === 0) return { stop: async () => {} };
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= pruneExpired(services, config)
      .then((results) => {
        const deleted = results.reduce((n, r) => n + r.deleted, 0);
        if (deleted) log.info({ deleted, workspaces: results.filter((r) => r.deleted).length }, 'retention: pruned expired events');
      })
      .catch((err) => log.error(safeErrorFields(err), 'retention: prune failed; will retry at the next run'))
      .finally(() => (running = undefined));
  };
  const timer = setInterval(run, config.pruneIntervalSeconds * 1000);
  timer.unref();
  const first = setTimeout(run, 1000);
  first.unref();
  return {
    async stop() {
      clearInterval(timer);
      clearTimeout(first);
      await running;
    },
  };
}
