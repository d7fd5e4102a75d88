import type { Knex } from 'knex';
import type { RawRows } from '../common/sql.ts';

/** Rows of a statement run with knex.raw on SQLite: better-sqlite3 answers with the rows themselves (RawRows). */
export const sqliteRows: RawRows = async <T>(db: Knex | Knex.Transaction, sql: string, bindings: readonly Knex.Value[]): Promise<T[]> =>
  (await db.raw(sql, bindings as Knex.Value[])) as T[];
