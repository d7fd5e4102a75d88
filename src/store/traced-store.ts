import { inDatabaseSpan } from '../tracing/spans.ts';
import type { OpenedStore } from './database-kind.ts';

/**
 * The port's members that make no span of their own: what holds a connection or a channel for
 * the process's life, the wrappers whose inner calls are spans already (retryingTransient runs
 * append again), the capabilities' objects, the knex handle, and what the metrics read at a scrape.
 */
const UNTRACED = new Set<PropertyKey>([
  'knex',
  'listenForChanges',
  'othersWritesVersion',
  'retryingTransient',
  'replicas',
  'appends',
  'close',
  'poolUse',
  'webhookBacklog',
  'then',
]);

/**
 * `store` with each call of the port made as a CLIENT span of the database (inDatabaseSpan:
 * `db.system.name` is `system`, `db.operation.name` the port's member, `webhooks.dueDeliveries`),
 * child of the caller's span when it is traced: only what a traced request or delivery asks of the
 * database, never the statement or its values. Used only while tracing is on (openStore).
 */
export function tracedStore(store: OpenedStore, system: string): OpenedStore {
  return traced(store, system, '') as OpenedStore;
}

function traced(target: object, system: string, prefix: string): object {
  // One wrapper per member, made at its first use, kept with the value it wraps.
  const made = new Map<PropertyKey, { original: unknown; wrapper: unknown }>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property);
      if (typeof property === 'symbol' || UNTRACED.has(property) || value === null) return value;
      if (typeof value !== 'function' && typeof value !== 'object') return value;
      const known = made.get(property);
      if (known?.original === value) return known.wrapper;
      const operation = `${prefix}${property}`;
      const wrapper =
        typeof value === 'function'
          ? (...args: unknown[]) => inDatabaseSpan(operation, system, () => (value as (...a: unknown[]) => unknown).apply(object, args))
          : traced(value as object, system, `${operation}.`);
      made.set(property, { original: value, wrapper });
      return wrapper;
    },
  });
}
