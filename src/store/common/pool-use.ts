import type { Knex } from 'knex';
import type { PoolUse } from '../port.ts';

/** The part of knex's pool (tarn) this reads: counts only, no connection is touched. */
interface TarnPool {
  max: number;
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/**
 * How the knex handle's connection pool is used now: on Postgres the pool of 10 (queries waiting
 * for a connection are the first sign of a saturated database); on SQLite the pool of one writing
 * connection (used while a write runs, pending: writes waiting for it; reads go to a connection of
 * their own, outside the pool). Read from the pool's own counters: costs nothing, no query.
 */
export function poolUse(knex: Knex): PoolUse {
  const pool = (knex.client as { pool?: TarnPool }).pool;
  if (!pool) return { used: 0, free: 0, pending: 0, max: 0 };
  return { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires(), max: pool.max };
}
