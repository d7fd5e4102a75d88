import type { Knex } from 'knex';

/**
 * Rows of a fixed statement of a hot path, given as SQL text with `?` placeholders (knex turns
 * them into `$n` on Postgres). Building a query with knex's builder costs more than running a
 * small one; the requests that make up most of the traffic (authenticate, read a page, append)
 * use these instead. Each database kind gives its own (`SqlPieces.rows`: `sqliteRows`,
 * `postgresRows`), since drivers answer knex.raw in different shapes; common code never looks.
 */
export type RawRows = <T>(db: Knex | Knex.Transaction, sql: string, bindings: readonly Knex.Value[]) => Promise<T[]>;

/** The pieces of SQL common code writes that differ per database (each kind's `sql`, Adapter.sql). */
export interface SqlPieces {
  /** The two-argument maximum: GREATEST (Postgres), MAX (SQLite). */
  greatest: string;
  /** Appended to a SELECT of rows to lease: skip those another transaction holds (Postgres), nothing where writes are serialized. */
  skipLocked: string;
  /** Prefix that keeps a column's index out of a search (SQLite's unary +), or nothing. */
  notIndexed: string;
  /** Rows of a statement run with knex.raw, in the shape this database's driver answers. */
  rows: RawRows;
}

/** `?, ?, …`: the placeholders of an IN list of `count` values. */
export const placeholders = (count: number) => Array.from({ length: count }, () => '?').join(', ');
