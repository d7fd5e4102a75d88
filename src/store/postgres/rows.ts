import type { Knex } from 'knex';
import type { RawRows } from '../common/sql.ts';

/** Rows of a statement run with knex.raw on Postgres: pg answers with a result whose `rows` they are (RawRows). */
export const postgresRows: RawRows = async <T>(db: Knex | Knex.Transaction, sql: string, bindings: readonly Knex.Value[]): Promise<T[]> =>
  ((await db.raw(sql, bindings as Knex.Value[])) as { rows: T[] }).rows;

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
