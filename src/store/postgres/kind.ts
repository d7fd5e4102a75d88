import { createStore } from '../common/store.ts';
import type { DatabaseKind } from '../database-kind.ts';
import type { FirstSeqs, SortOutStored, WorkspaceAppend } from '../port.ts';
import type { Knex } from 'knex';
import { migratePostgres, POSTGRES_SQL, postgresAdapter } from './adapter.ts';
import { appendOnPostgres } from './append.ts';
import { postgresErrors } from './errors.ts';
import { HEADS_CHANNEL } from './changes.ts';
import { EventPartitions } from './partitions.ts';

/** The partitions known per knex client of the library's callers (EventPartitions). */
const partitionsOfClients = new WeakMap<object, EventPartitions>();

/** Store.append inside a transaction of the caller's own knex handle (the library's publish). */
function appendInTransaction(
  trx: Knex.Transaction,
  appends: WorkspaceAppend[],
  storedAt: number,
  sortOut: SortOutStored,
): Promise<FirstSeqs> {
  let partitions = partitionsOfClients.get(trx.client);
  if (!partitions) partitionsOfClients.set(trx.client, (partitions = new EventPartitions()));
  return appendOnPostgres(trx, partitions, HEADS_CHANNEL, appends, storedAt, sortOut, { trx });
}

/** Postgres: `postgres://…` or `postgresql://…`, through pg; may have read replicas. */
export const postgresKind: DatabaseKind = {
  name: 'postgres',
  telemetryName: 'postgresql',
  label: 'Postgres',
  schemes: ['postgres:', 'postgresql:'],
  urlForm: 'postgres://…',
  accepts: (url) => /^postgres(ql)?:\/\//.test(url),
  drivers: ['pg', 'postgres', 'postgresql'],
  readReplicas: true,
  open(url, options) {
    const adapter = postgresAdapter(url, options);
    return createStore(adapter);
  },
  migrate: migratePostgres,
  appendInTransaction,
  sql: POSTGRES_SQL,
  errors: postgresErrors,
};
