import knexFactory, { type Knex } from 'knex';
import { createRequire } from 'node:module';
import { knexLog } from '../common/driver-log.ts';
import { LOCK_TIMEOUT_MS, QUERY_TIMEOUT_MS, STATEMENT_TIMEOUT_MS } from './timeouts.ts';

/** pg itself, loaded with the first Postgres database only: a SQLite service does without it (~5 MB). */
export function pgModule(): typeof import('pg') {
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  if (!pgReady) {
    // int8 (bigint) columns hold sequence numbers and epoch milliseconds, far below 2^53: read them as numbers.
    pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));
    pgReady = true;
  }
  return pg;
}
let pgReady = false;

/** The margin by which the server's statement_timeout ends before a shorter query timeout given to openPostgres. */
const SERVER_CANCELS_FIRST_BY_MS = QUERY_TIMEOUT_MS - STATEMENT_TIMEOUT_MS;
/** Handles without a query timeout (migrations, the CLI) keep longer server-side limits. */
const UNWATCHED_STATEMENT_TIMEOUT_MS = 15_000;
const UNWATCHED_LOCK_TIMEOUT_MS = 5000;

interface PgConnection {
  query: (...args: unknown[]) => unknown;
  __knex__disposed?: unknown;
  connection: { stream: { destroy(): void } };
}

/**
 * pg's query_timeout rejects a query that got no answer but leaves its connection waiting for
 * it, so whatever is queued behind (a transaction's ROLLBACK) would hang as long as the network
 * does. Dropping the socket fails those at once; knex then sees the connection end and the pool
 * replaces it.
 */
function dropConnectionOnTimeout(conn: PgConnection): void {
  const query = conn.query;
  conn.query = function (this: unknown, ...args: unknown[]) {
    const callback = args.at(-1);
    if (typeof callback === 'function') {
      args[args.length - 1] = (err: Error | null, ...rest: unknown[]) => {
        if (err?.message === 'Query read timeout') {
          // knex's own mark of a dead connection (set when its 'end' event comes, a few ticks
          // later): set now, so the pool does not lend it again to the next query meanwhile.
          conn.__knex__disposed ??= err.message;
          conn.connection.stream.destroy();
        }
        return callback(err, ...rest);
      };
    }
    return query.apply(this, args);
  };
}

/**
 * A knex pool on a Postgres URL. `queryTimeoutMs` bounds how long a query may wait for an answer;
 * 0 lifts it, for migrations that may legitimately run long.
 */
export function openPostgresKnex(url: string, options: { queryTimeoutMs?: number; poolMax?: number } = {}): Knex {
  pgModule();
  const queryTimeoutMs = options.queryTimeoutMs ?? QUERY_TIMEOUT_MS;
  const watched = queryTimeoutMs > 0;
  // The server's limits end before the client's: a statement the client gives up on is one Postgres has not finished.
  const statementTimeoutMs = watched
    ? Math.max(1, Math.min(STATEMENT_TIMEOUT_MS, queryTimeoutMs - SERVER_CANCELS_FIRST_BY_MS))
    : UNWATCHED_STATEMENT_TIMEOUT_MS;
  const lockTimeoutMs = watched ? Math.min(LOCK_TIMEOUT_MS, statementTimeoutMs) : UNWATCHED_LOCK_TIMEOUT_MS;
  return knexFactory({
    client: 'pg',
    log: knexLog,
    connection: {
      connectionString: url,
      // Fail fast when the database is unreachable instead of hanging requests.
      connectionTimeoutMillis: 3000,
      // plan_cache_mode: the service's named statements (the appends, the pages) are planned once
      // per connection and keep that plan. Unnamed ones (knex's) are planned at every run whatever
      // it says. A restricted page merges one scan per mailbox: Postgres judged its generic plan
      // costlier than one made for the values and planned it at every run, which cost more than
      // running it.
      options: `-c lock_timeout=${lockTimeoutMs} -c statement_timeout=${statementTimeoutMs} -c plan_cache_mode=force_generic_plan`,
      ...(watched ? { query_timeout: queryTimeoutMs } : {}),
      keepAlive: true,
    },
    pool: {
      min: 0,
      max: options.poolMax ?? 10,
      afterCreate(conn: PgConnection, done: (err: Error | null, conn: unknown) => void) {
        dropConnectionOnTimeout(conn);
        done(null, conn);
      },
    },
    acquireConnectionTimeout: 5000,
  });
}
