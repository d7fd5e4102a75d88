import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Exposition } from './listener.ts';

/**
 * `serve --workers N`: each worker counts in its own process, and only the primary listens on
 * METRICS_PORT (a worker listening there would share the port through the primary, and each
 * scrape would reach one worker at random). A scrape asks every worker over the cluster's IPC
 * channel and sums what they answer (prom-client's AggregatorRegistry): counters and histograms
 * add up, gauges by their declared aggregator (the database-wide backlog is taken once, `max`;
 * the event-loop lag is averaged).
 */

/** In a worker: answer the primary's requests with this registry's metrics. */
export function reportToPrimary(registry: Registry): void {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one adds the worker's IPC listener (prom-client's cluster module does it there).
  new AggregatorRegistry();
}

/** In the primary: the workers' metrics, summed, at each scrape. */
export function workersExposition(): Exposition {
  const aggregator = new AggregatorRegistry();
  return { text: () => aggregator.clusterMetrics(), contentType: aggregator.contentType };
}
