import type { Knex } from 'knex';
import type { OpenedStore } from '../database-kind.ts';
import type { WriteTx } from '../port.ts';
import type { Adapter } from './adapter.ts';
import { searchEvents } from './event-search.ts';
import { erasureTables } from './erasures.ts';
import { eventsAfter, feedHead, feedHeads, readPageRows } from './events.ts';
import { pageReader } from './feed-page.ts';
import { countActiveKeys, findKey, insertKey, keyById, keysAfter, listKeys, revokeKey } from './keys.ts';
import { lastSeqOfMailboxes } from './mailbox-positions.ts';
import { oauthTables } from './oauth.ts';
import { poolUse } from './pool-use.ts';
import { pruneAll, prunedThrough, prunedThroughMailboxes } from './retention.ts';
import { sharedCursorSecret } from './settings.ts';
import { positionAt } from './time-position.ts';
import {
  attemptHealth,
  claimTestSlot,
  dueDeliveries,
  findEndpoint,
  leaseEndpoints,
  listEndpoints,
  pendingCount,
  pendingCountUpTo,
  queueDeliveries,
  recentAttempts,
  recordAttempt,
  releaseLease,
  renewLease,
} from './webhooks.ts';
import { webhookBacklog } from './webhook-backlog.ts';
import { countWorkspaces, createWorkspace, findWorkspace, listWorkspaces } from './workspaces.ts';
import { retryingTransient } from './write-transaction.ts';

/** The Store of one database: the common code over its adapter (sqliteAdapter, postgresAdapter), with its knex handle. */
export function createStore(adapter: Adapter): OpenedStore {
  const { knex, readRows, sql } = adapter;
  const readPage = pageReader((q) => adapter.queryPage(q));
  return {
    description: adapter.description,
    knex,
    appends: adapter.appends,
    ...(adapter.othersWritesVersion ? { othersWritesVersion: adapter.othersWritesVersion } : {}),
    ...(adapter.listenForChanges ? { listenForChanges: adapter.listenForChanges } : {}),
    ...(adapter.replicas ? { replicas: adapter.replicas } : {}),

    append: (appends, storedAt, sortOut, options = {}) => adapter.append(appends, storedAt, sortOut, options),
    readPage,
    readPageRows: (q) => readPageRows(readRows, q),
    searchEvents: async (q) => (await adapter.searchOnReplica?.(q)) ?? (await searchEvents(adapter.searchSession(), q)),
    eventsAfter: (workspaceId, afterSeq, limit) => eventsAfter(knex, workspaceId, afterSeq, limit),

    feedHead: (workspaceId) => feedHead(readRows, workspaceId),
    feedHeads: (workspaceIds) => feedHeads(readRows, workspaceIds),
    positionAt: (workspaceId, atMs) =>
      positionAt(readRows, (workspaceId, seq, within) => adapter.storedAtOf(workspaceId, seq, within), workspaceId, atMs),
    prunedThrough: (workspaceId) => prunedThrough(readRows, workspaceId),
    prunedThroughMailboxes: (workspaceId, mailboxes) => prunedThroughMailboxes(readRows, workspaceId, mailboxes),
    lastSeqOfMailboxes: (workspaceId, mailboxes, throughSeq) => lastSeqOfMailboxes(readRows, workspaceId, mailboxes, throughSeq),
    pruneAll: (cutoffMs, batchSize) => adapter.prune?.(cutoffMs, batchSize) ?? pruneAll(knex, sql, cutoffMs, batchSize),

    retryingTransient: (attempt) => retryingTransient(attempt, adapter.errors.retryable),
    write: (work) =>
      retryingTransient(
        () =>
          knex.transaction(async (trx) => {
            await adapter.beginWrite(trx);
            return work(writeTx(adapter, trx));
          }),
        adapter.errors.retryable,
      ),

    createWorkspace: (name, verified, now) => createWorkspace(knex, name, verified, now),
    findWorkspace: (id) => findWorkspace(knex, id),
    countWorkspaces: () => countWorkspaces(knex),
    listWorkspaces: () => listWorkspaces(knex),

    keys: {
      byId: (keyId) => keyById(readRows, keyId),
      insert: (row) => insertKey(knex, row),
      list: (workspaceId) => listKeys(knex, workspaceId),
      after: (workspaceId, options) => keysAfter(knex, workspaceId, options),
      find: (workspaceId, keyId) => findKey(knex, workspaceId, keyId),
      revoke: (keyId, now) => revokeKey(knex, keyId, now),
    },

    webhooks: {
      findEndpoint: (workspaceId, url) => findEndpoint(knex, workspaceId, url),
      listEndpoints: (workspaceId) => listEndpoints(knex, workspaceId),
      leaseEndpoints: (request) => leaseEndpoints(knex, sql, request),
      renewLease: (endpointId, owner, until) => renewLease(knex, endpointId, owner, until),
      releaseLease: (endpointId, owner, pauseUntil) => releaseLease(knex, endpointId, owner, pauseUntil),
      dueDeliveries: (endpointId, now, max) => dueDeliveries(knex, sql, endpointId, now, max),
      recordAttempt: (record) => recordAttempt(knex, record),
      pendingCount: (endpointId) => pendingCount(knex, endpointId),
      recentAttempts: (endpointId, max) => recentAttempts(knex, endpointId, max),
      attemptHealth: (endpointId, window) => attemptHealth(knex, sql, endpointId, window),
      claimTestSlot: (workspaceId, url, now, cooldownMs) => claimTestSlot(knex, sql, workspaceId, url, now, cooldownMs),
    },

    oauth: oauthTables(knex, readRows),
    erasures: erasureTables(knex, adapter, readPage.forget),

    ping: async () => void (await knex.raw('select 1')),
    poolUse: () => poolUse(knex),
    webhookBacklog: (cap) => webhookBacklog(knex, sql, cap),
    sharedCursorSecret: () => sharedCursorSecret(knex),
    migrate: () => adapter.migrate(),
    close: () => adapter.close(),
  };
}

function writeTx(adapter: Adapter, trx: Knex.Transaction): WriteTx {
  return {
    lockWorkspace: (workspaceId) => adapter.lockRow(trx, 'workspaces', workspaceId),
    lockEndpoint: (endpointId) => adapter.lockRow(trx, 'webhook_endpoints', endpointId),
    findEndpoint: (workspaceId, url) => findEndpoint(trx, workspaceId, url),
    countEndpoints: async (workspaceId) =>
      Number((await trx('webhook_endpoints').count({ n: '*' }).where({ workspace_id: workspaceId }).first())?.n ?? 0),
    insertEndpoint: async (row) => void (await trx('webhook_endpoints').insert(row)),
    updateEndpoint: async (id, changes) => void (await trx('webhook_endpoints').where({ id }).update(changes)),
    removeEndpoint: async (id) => void (await trx('webhook_endpoints').where({ id }).del()),
    pendingCountUpTo: (endpointId, max) => pendingCountUpTo(trx, adapter.sql, endpointId, max),
    queueDeliveries: (endpointId, workspaceId, events, now) => queueDeliveries(trx, endpointId, workspaceId, events, now),
    countActiveKeys: (workspaceId) => countActiveKeys(trx, workspaceId),
    insertKey: (row) => insertKey(trx, row),
    findKey: (workspaceId, keyId) => findKey(trx, workspaceId, keyId),
  };
}
