import { LOCK_TIMEOUT_MS, STATEMENT_TIMEOUT_MS } from './timeouts.ts';
import { LOCK_NOT_AVAILABLE, QUERY_CANCELED, sqlState } from './write-outcome.ts';
import type { KindErrors } from '../database-kind.ts';

/**
 * Postgres's failures (postgresKind.errors), by SQLSTATE. Transient: serialization failures and
 * deadlocks, and a unique violation from a concurrent insert of the same client-supplied event id
 * (the retry then finds the stored event and answers as an idempotent replay). Temporary (503): the
 * server unreachable, restarting or refusing connections, a read-only transaction, a full disk.
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
        return postgresErrors.temporaryBecause(err) ?? 'the database refused the write';
    }
  },
  temporaryBecause(err) {
    const state = sqlState(err);
    if (state === READ_ONLY_TRANSACTION) return 'the database is read-only at the moment (a standby, or a failover under way)';
    if (state !== undefined && DISK_FULL.includes(state)) return "the database's disk is full";
    if (state !== undefined && (state.startsWith('08') || state.startsWith('53') || SERVER_GOING.includes(state)))
      return 'the database could not be reached';
    // "database … is not currently accepting connections" (ALLOW_CONNECTIONS false), or a recovery in progress.
    if (state === '55000' && /not currently accepting connections/.test(messageOf(err))) return 'the database could not be reached';
    const { name, code, syscall } = (err ?? {}) as { name?: unknown; code?: unknown; syscall?: unknown };
    if (name === 'KnexTimeoutError') return 'no database connection was free in time';
    if (typeof code === 'string' && NETWORK_CODES.includes(code)) return 'the database could not be reached';
    if (syscall === 'connect' || syscall === 'getaddrinfo') return 'the database could not be reached';
    if (/Connection terminated|connection timeout|Connection ended|Client has encountered a connection error/i.test(messageOf(err)))
      return 'the database could not be reached';
    return undefined;
  },
};

const messageOf = (err: unknown) => String((err as { message?: unknown } | null)?.message ?? '');
/** read_only_sql_transaction: a standby, or default_transaction_read_only. */
const READ_ONLY_TRANSACTION = '25006';
/** disk_full (the rest of class 53, insufficient resources: out of memory or connections, is told as unreachable). */
const DISK_FULL = ['53100'];
/** The server shutting down, restarting or not yet up: admin_shutdown, crash_shutdown, cannot_connect_now. */
const SERVER_GOING = ['57P01', '57P02', '57P03'];
const NETWORK_CODES = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'];
