import { LOCK_TIMEOUT_MS, STATEMENT_TIMEOUT_MS } from './timeouts.ts';
import { LOCK_NOT_AVAILABLE, QUERY_CANCELED, sqlState } from './write-outcome.ts';
import type { KindErrors } from '../database-kind.ts';

/**
 * Postgres's failures (postgresKind.errors), by SQLSTATE. Transient: serialization failures and
 * deadlocks, and a unique violation from a concurrent insert of the same client-supplied event id
 * (the retry then finds the stored event and answers as an idempotent replay).
 */
export const postgresErrors: KindErrors = {
  retryable: (err) => ['40001', '40P01', '23505'].includes(sqlState(err) ?? ''),
  notStoredBecause(err) {
    switch (sqlState(err)) {
      case LOCK_NOT_AVAILABLE:
        return `another transaction held the workspace's feed for more than ${LOCK_TIMEOUT_MS / 1000} s`;
      case QUERY_CANCELED:
        return `the database did not finish the write within ${STATEMENT_TIMEOUT_MS / 1000} s`;
      case undefined:
        return undefined;
      default:
        return 'the database refused the write';
    }
  },
};
