import knexFactory, { type Knex } from 'knex';
import { postgresRows } from './rows.ts';
import { DAY_MS, FIRST_MONDAY_MS, WEEK_MS, weekStart } from '../common/weeks.ts';

export { WEEK_MS, weekStart };

/*
 * Postgres keeps `events` partitioned by week of `stored_at` (migration 009): retention drops a
 * whole week (prunePartitions), a catalog change instead of a DELETE of every row.
 *
 * Weeks start on Monday 00:00 UTC. A partition is one week, except the one an existing database
 * was migrated into (every row stored before the migration: FROM MINVALUE to the end of the
 * migration's week); either way every partition is a union of whole weeks, so two stored_at of
 * the same week always share a partition (the duplicate guard of appendOnPostgres relies on it).
 *
 * Partitions are made on demand, before an append whose stored_at has none (ensureFor), and a day
 * ahead of the next week, so the week's first appends find theirs. Making one attaches an empty
 * table (SHARE UPDATE EXCLUSIVE on `events`: reads and writes go on), under an advisory lock so
 * instances never race to make the same week.
 *
 * Each partition has its own unique indexes (workspace_id, seq) and (workspace_id, id): a unique
 * index of a partitioned table must hold the partition key, which would make it useless to both.
 * Seqs are unique by the counters (the write path's notes beside inWorkspaceOrder); ids across partitions by appendOnPostgres.
 * The other indexes are the parent's (partitioned indexes), made on each partition as it attaches.
 */

/** The same week number in SQL, of a bigint expression of epoch ms: equal for two stored_at of one week. */
export const sqlWeekOf = (expression: string) => `floor((${expression} - ${FIRST_MONDAY_MS}) / ${WEEK_MS}.0)`;

/** `events_w20261123`: the partition of the week starting on that Monday. */
export const weekPartitionName = (fromMs: number) => `events_w${new Date(fromMs).toISOString().slice(0, 10).replaceAll('-', '')}`;

/** A partition of `events`: stored_at in [from, to). */
export interface EventPartition {
  name: string;
  from: number;
  to: number;
}

// Arbitrary, fixed: serializes making and dropping partitions across instances.
export const PARTITIONS_LOCK = 0x65767077;

/** The partitions of `events`, oldest first, read from the catalog. */
export async function listPartitions(db: Knex | Knex.Transaction): Promise<EventPartition[]> {
  const rows = await postgresRows<{ name: string; bound: string }>(
    db,
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'events'::regclass`,
    [],
  );
  return rows.map(({ name, bound }) => ({ name, ...parseBound(bound) })).sort((a, b) => a.from - b.from);
}

/** `FOR VALUES FROM ('1763942400000') TO ('1764547200000')`, MINVALUE allowed as the lower bound. */
function parseBound(bound: string): { from: number; to: number } {
  const match = /FROM \((.+)\) TO \((.+)\)/.exec(bound);
  if (!match) throw new Error(`unexpected partition bound of events: ${bound}`);
  const value = (text: string) => (text === 'MINVALUE' ? -Infinity : text === 'MAXVALUE' ? Infinity : Number(text.replaceAll("'", '')));
  return { from: value(match[1]!), to: value(match[2]!) };
}

/** Makes the week partition starting at `from` (empty, its own unique indexes, then attached). Run under PARTITIONS_LOCK. */
async function createWeekPartition(trx: Knex.Transaction, from: number): Promise<void> {
  const name = weekPartitionName(from);
  const run = (sql: string) => trx.raw(sql);
  await run(`CREATE TABLE ${name} (LIKE events INCLUDING DEFAULTS)`);
  await run(`ALTER TABLE ${name} ADD CONSTRAINT ${name}_pkey PRIMARY KEY (workspace_id, seq)`);
  await run(`ALTER TABLE ${name} ADD CONSTRAINT ${name}_workspace_id_id UNIQUE (workspace_id, id)`);
  await run(`ALTER TABLE events ATTACH PARTITION ${name} FOR VALUES FROM (${from}) TO (${from + WEEK_MS})`);
}

/**
 * The weeks this process knows have a partition, and making the ones missing. One per Store (and
 * one per knex client for the library's appends in its caller's transactions). covers() is what
 * an append asks first: a lookup, no round trip, once the week is known.
 */
export class EventPartitions {
  private known: EventPartition[] = [];
  private making: Promise<void> | undefined;

  /** `knex`: where to make partitions (none: only for a caller's transaction, see ensureFor). */
  constructor(private readonly knex?: Knex) {}

  /** True when `ms`'s partition, and the next week's from the last day of a week, are known to exist. */
  covers(ms: number): boolean {
    return this.has(ms) && this.has(ms + DAY_MS);
  }

  /**
   * Makes sure the partitions covers() asks for exist, making the missing ones in a transaction
   * of their own: on this store's handle, or for a caller's transaction `trx` (the library's
   * publish) on a connection of their own. Never inside the caller's transaction: its locks
   * (the advisory lock, the new table) would hold every writer until it commits.
   */
  async ensureFor(ms: number, trx?: Knex.Transaction): Promise<void> {
    const weeks = [weekStart(ms), weekStart(ms + DAY_MS)];
    while (!this.covers(ms)) {
      // One making at a time per process; another instance's is waited for by the advisory lock.
      if (this.making) {
        await this.making;
        continue;
      }
      this.making = (trx ? onAnotherConnection(trx, (own) => makeMissing(own, weeks)) : this.onOwnHandle((own) => makeMissing(own, weeks)))
        .then((partitions) => void (this.known = partitions))
        .finally(() => (this.making = undefined));
      await this.making;
    }
  }

  private has(ms: number): boolean {
    return this.known.some((p) => p.from <= ms && ms < p.to);
  }

  private onOwnHandle<T>(work: (own: Knex.Transaction) => Promise<T>): Promise<T> {
    const knex = this.knex;
    if (!knex) throw new Error('EventPartitions without a knex handle makes partitions only for a caller’s transaction');
    return knex.transaction(work);
  }
}

/**
 * `work` in a transaction of its own, on a connection of its own made with the settings of `trx`'s
 * knex (a transaction's client would hand back the transaction's own connection). Once a week at
 * most per process: the price of a connection is nothing there.
 */
async function onAnotherConnection<T>(trx: Knex.Transaction, work: (own: Knex.Transaction) => Promise<T>): Promise<T> {
  const own = knexFactory({ ...(trx.client as { config: Knex.Config }).config, pool: { min: 0, max: 1 } });
  try {
    return await own.transaction(work);
  } finally {
    await own.destroy();
  }
}

/**
 * Makes the week partitions of `weeks` that no partition covers, in `trx`; returns them all after.
 * Only a making takes PARTITIONS_LOCK, so finding them all made waits for nobody.
 */
async function makeMissing(trx: Knex.Transaction, weeks: number[]): Promise<EventPartition[]> {
  const missing = (partitions: EventPartition[]) =>
    [...new Set(weeks)].filter((from) => !partitions.some((p) => p.from <= from && from < p.to));
  const partitions = await listPartitions(trx);
  if (missing(partitions).length === 0) return partitions;
  await trx.raw('SELECT pg_advisory_xact_lock(?)', [PARTITIONS_LOCK]);
  const toMake = missing(await listPartitions(trx));
  for (const from of toMake) await createWeekPartition(trx, from);
  return listPartitions(trx);
}
