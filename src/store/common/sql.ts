import type { Knex } from 'knex';

/**
 * Rows of a fixed statement of a hot path, given as SQL text with `?` placeholders (knex turns
 * them into `$n` on Postgres). Building a query with knex's builder costs more than running a
 * small one; the requests that make up most of the traffic
 * (authenticate, read a page, append) use these instead.
 */
export async function queryRows<T>(db: Knex | Knex.Transaction, sql: string, bindings: readonly Knex.Value[]): Promise<T[]> {
  const result = await db.raw(sql, bindings as Knex.Value[]);
  // knex.raw answers differently per driver: pg gives { rows }, better-sqlite3 the rows themselves.
  return (Array.isArray(result) ? result : result.rows) as T[];
}

/** A Postgres statement whose text is the same on every run, with its `$n` values. */
export interface PgStatement {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * Rows of a PgStatement, prepared once per connection under its name (pg's named statements):
 * Postgres parses it once per connection, and keeps one plan for it when its estimates say a
 * generic plan is as good as one made for the values. The values go to pg as they are
 * (knex's `?` bindings would expand arrays), through knex's options, so knex still runs the query.
 */
export async function preparedRows<T>(exec: Knex | Knex.Transaction, statement: PgStatement): Promise<T[]> {
  const result = await exec.raw(statement.text).options({ name: statement.name, values: statement.values });
  return result.rows as T[];
}

/** `?, ?, …`: the placeholders of an IN list of `count` values. */
export const placeholders = (count: number) => Array.from({ length: count }, () => '?').join(', ');
