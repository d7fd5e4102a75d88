import type { Knex } from 'knex';
import type { Adapter } from '../common/adapter.ts';
import type { SqlPieces } from '../common/sql.ts';
import { runMigrations } from '../common/migrate.ts';
import { postgresRows } from './rows.ts';
import { postgresErrors } from './errors.ts';
import { appendOnPostgres } from './append.ts';
import { HEADS_CHANNEL, listenForChanges } from './changes.ts';
import { openPostgresKnex } from './connection.ts';
import { prunePartitions } from './partition-pruning.ts';
import { EventPartitions } from './partitions.ts';
import { queryPostgresPage } from './page.ts';
import { ReadReplicas } from './replicas.ts';
import { postgresSearchSession } from './search.ts';

/** The SQL pieces common code needs on Postgres (postgresKind.sql). */
export const POSTGRES_SQL: SqlPieces = { greatest: 'GREATEST', skipLocked: 'FOR UPDATE SKIP LOCKED', notIndexed: '', rows: postgresRows };

// Arbitrary, fixed: the advisory lock every event-feed instance takes around migrations.
const MIGRATION_LOCK = 0x65766e74;

/**
 * Applies pending migrations. knex's own lock is taken only after it creates its bookkeeping
 * tables, which races on a fresh database: the whole run is serialized by an advisory lock, so
 * instances starting at once are safe.
 */
export function migratePostgres(knex: Knex): Promise<string[]> {
  return knex.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?)', [MIGRATION_LOCK]);
    return runMigrations(knex, 'postgres');
  });
}

/**
 * Postgres: a pool of connections, several instances sharing the database. Each instance hears
 * the others' commits and key changes on a channel of its own (listenForChanges).
 */
export function postgresAdapter(url: string, options: { queryTimeoutMs?: number; readUrls?: readonly string[] } = {}): Adapter {
  const knex: Knex = openPostgresKnex(url, options);
  const replicas = options.readUrls?.length ? new ReadReplicas(options.readUrls) : undefined;
  const partitions = new EventPartitions(knex);
  return {
    description: 'Postgres',
    knex,
    // A second shared statement may run while one commits (its statements overlap the first one's
    // WAL flush); one may skip a workspace another transaction holds (FOR UPDATE SKIP LOCKED).
    appends: { concurrent: 2, skipLocked: true },
    listenForChanges: (events, log, listenOptions) => listenForChanges(url, events, log, listenOptions),
    append: (appends, storedAt, sortOut, appendOptions) =>
      appendOnPostgres(knex, partitions, HEADS_CHANNEL, appends, storedAt, sortOut, appendOptions),
    // Retention drops whole weeks of events (prunePartitions).
    prune: (cutoffMs, batchSize) => prunePartitions(knex, cutoffMs, batchSize),
    // A catch-up page from a replica when one serves it whole; anything else from the primary (ReadReplicas).
    queryPage: async (q) => (q.catchUp && replicas ? await replicas.wholePage(q) : undefined) ?? (await queryPostgresPage(knex, q)),
    ...(replicas ? { replicas: { status: () => replicas.status(), watch: (log) => replicas.watch(log) } } : {}),
    searchSession: () => postgresSearchSession(knex),
    ...(replicas ? { searchOnReplica: (q) => replicas.search(q) } : {}),
    readRows: (sql, bindings) => postgresRows(knex, sql, bindings),
    // With stored_at bounds, only the weeks' partitions between them are looked in (pruned when planned).
    storedAtOf: async (workspaceId, seq, within) => {
      const bounds = [
        ...(within && Number.isFinite(within.fromMs) ? [['>=', within.fromMs] as const] : []),
        ...(within && Number.isFinite(within.toMs) ? [['<=', within.toMs] as const] : []),
      ];
      const sql = `SELECT stored_at FROM events WHERE workspace_id = ? AND seq = ?${bounds.map(([op]) => ` AND stored_at ${op} ?`).join('')}`;
      const [row] = await postgresRows<{ stored_at: number | string }>(knex, sql, [workspaceId, seq, ...bounds.map(([, ms]) => ms)]);
      return row === undefined ? undefined : Number(row.stored_at);
    },
    beginWrite: async () => {},
    // Under READ COMMITTED two transactions could each read a count and both insert: they take turns on the row.
    lockRow: async (trx, table, id) => void (await trx(table).where({ id }).forUpdate().first('id')),
    sql: POSTGRES_SQL,
    errors: postgresErrors,
    migrate: () => migratePostgres(knex),
    close: async () => {
      await replicas?.close();
      await knex.destroy();
    },
  };
}
