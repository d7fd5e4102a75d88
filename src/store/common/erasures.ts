import type { Knex } from 'knex';
import type { ErasureBatch, ErasureRow, ErasureState, ErasureStore, StoredEnvelope } from '../port.ts';
import type { Adapter } from './adapter.ts';
import { retryingTransient } from './write-transaction.ts';

interface Row {
  id: string;
  workspace_id: string;
  status: string;
  address_hashes: string;
  request_key: string;
  sealed_addresses: string | null;
  requested_by: string;
  requested_at: number | string;
  completed_at: number | string | null;
  from_seq: number | string;
  through_seq: number | string;
  cursor_seq: number | string;
  events_erased: number | string;
  updated_at: number | string;
}

const decode = (row: Row): ErasureRow => ({
  id: row.id,
  workspaceId: row.workspace_id,
  status: row.status as ErasureState,
  addressHashes: JSON.parse(row.address_hashes) as string[],
  requestKey: row.request_key,
  sealedAddresses: row.sealed_addresses,
  requestedBy: row.requested_by,
  requestedAt: Number(row.requested_at),
  completedAt: row.completed_at === null ? null : Number(row.completed_at),
  fromSeq: Number(row.from_seq),
  throughSeq: Number(row.through_seq),
  cursorSeq: Number(row.cursor_seq),
  eventsErased: Number(row.events_erased),
  updatedAt: Number(row.updated_at),
});

const encode = (row: Omit<ErasureRow, 'updatedAt'>) => ({
  id: row.id,
  workspace_id: row.workspaceId,
  status: row.status,
  address_hashes: JSON.stringify(row.addressHashes),
  request_key: row.requestKey,
  sealed_addresses: row.sealedAddresses,
  requested_by: row.requestedBy,
  requested_at: row.requestedAt,
  completed_at: row.completedAt,
  from_seq: row.fromSeq,
  through_seq: row.throughSeq,
  cursor_seq: row.cursorSeq,
  events_erased: row.eventsErased,
  updated_at: row.requestedAt,
});

async function latestFor(db: Knex, workspaceId: string, requestKey: string): Promise<ErasureRow | undefined> {
  const row = (await db('erasures')
    .where({ workspace_id: workspaceId, request_key: requestKey })
    .orderBy('requested_at', 'desc')
    .orderBy('id', 'desc')
    .first()) as Row | undefined;
  return row && decode(row);
}

/** A LIKE pattern matching `needle` anywhere, its wildcards escaped (ESCAPE '\'). */
const containing = (needle: string) => `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The erasures' table and the batches that rewrite events (ErasureStore), on any database. */
export function erasureTables(
  knex: Knex,
  adapter: Pick<Adapter, 'readRows' | 'beginWrite' | 'lockRow' | 'errors'>,
  forgetReadAhead: (workspaceId: string) => void,
): ErasureStore['erasures'] {
  return {
    forgetReadAhead,
    begin: (workspaceId, requestKey, plan) =>
      retryingTransient(
        () =>
          knex.transaction(async (trx) => {
            await adapter.beginWrite(trx);
            await adapter.lockRow(trx, 'workspaces', workspaceId);
            const latest = await latestFor(trx, workspaceId, requestKey);
            const row = plan(latest);
            if (!row) return { erasure: latest!, created: false };
            await trx('erasures').insert(encode(row));
            return { erasure: (await latestFor(trx, workspaceId, requestKey))!, created: true };
          }),
        adapter.errors.retryable,
      ),
    byId: async (workspaceId, id) => {
      const row = (await knex('erasures').where({ workspace_id: workspaceId, id }).first()) as Row | undefined;
      return row && decode(row);
    },
    latestFor: (workspaceId, requestKey) => latestFor(knex, workspaceId, requestKey),
    list: async (workspaceId, limit) =>
      (
        (await knex('erasures')
          .where({ workspace_id: workspaceId })
          .orderBy('requested_at', 'desc')
          .orderBy('id', 'desc')
          .limit(limit)) as Row[]
      ).map(decode),
    // Off the write path (SQLite's read connection): every instance asks every few seconds.
    unfinished: async () =>
      (await adapter.readRows<Row>(`SELECT * FROM erasures WHERE status <> 'completed' ORDER BY requested_at, id`, [])).map(decode),
    claim: async (id, owner, now, until) => {
      const claimed = await knex('erasures')
        .where({ id })
        .whereNot({ status: 'completed' })
        .andWhere((q) => q.whereNull('lease_until').orWhere('lease_until', '<', now).orWhere({ lease_owner: owner }))
        .update({ lease_owner: owner, lease_until: until, status: 'running' });
      return Number(claimed) === 1;
    },
    candidates: async (workspaceId, afterSeq, throughSeq, needles) => {
      if (needles.length === 0) return [];
      const where = needles.map(() => `lower(envelope) LIKE ? ESCAPE '\\'`).join(' OR ');
      const rows = await adapter.readRows<{ seq: number | string; envelope: string }>(
        `SELECT seq, envelope FROM events WHERE workspace_id = ? AND seq > ? AND seq <= ? AND (${where}) ORDER BY seq`,
        [workspaceId, afterSeq, throughSeq, ...needles.map(containing)],
      );
      return rows.map((row): StoredEnvelope => ({ seq: Number(row.seq), envelope: row.envelope }));
    },
    commitBatch: async (batch) => {
      const written = await retryingTransient(() => commitBatch(knex, adapter, batch), adapter.errors.retryable);
      if (written) forgetReadAhead(batch.workspaceId);
      return written;
    },
    movedSince: async (sinceMs) =>
      (
        await adapter.readRows<{ workspace_id: string; updated_at: number | string }>(
          'SELECT workspace_id, updated_at FROM erasures WHERE updated_at > ?',
          [sinceMs],
        )
      ).map((row) => ({ workspaceId: row.workspace_id, updatedAt: Number(row.updated_at) })),
  };
}

/**
 * One batch: the progress first (it fails, writing nothing, when another instance took the
 * lease), then the rewritten events by primary key. Short by construction: the batch's events
 * were read and redacted before it began.
 */
function commitBatch(knex: Knex, adapter: Pick<Adapter, 'beginWrite'>, batch: ErasureBatch): Promise<boolean> {
  return knex.transaction(async (trx) => {
    await adapter.beginWrite(trx);
    const progress: Record<string, unknown> = {
      cursor_seq: batch.cursorSeq,
      events_erased: trx.raw('events_erased + ?', [batch.rewrites.length]),
      updated_at: batch.now,
    };
    if (batch.done)
      Object.assign(progress, {
        status: 'completed',
        completed_at: batch.now,
        sealed_addresses: null,
        lease_owner: null,
        lease_until: null,
      });
    const updated = await trx('erasures')
      .where({ id: batch.id, lease_owner: batch.owner })
      .whereNot({ status: 'completed' })
      .update(progress);
    if (Number(updated) !== 1) return false;
    for (const event of batch.rewrites) {
      await trx('events').where({ workspace_id: batch.workspaceId, seq: event.seq }).update({ envelope: event.envelope });
    }
    return true;
  });
}
