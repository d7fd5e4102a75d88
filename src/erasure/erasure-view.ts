import type { Erasure } from '../../generated/types.ts';
import type { ErasureRow } from '../store/port.ts';

/** An erasure as the contract shows it (Erasure): never its addresses, only their keyed hashes. */
export function erasureView(row: ErasureRow): Erasure {
  return {
    id: row.id,
    workspace_id: row.workspaceId,
    status: row.status,
    address_hashes: row.addressHashes,
    requested_by: row.requestedBy,
    requested_at: new Date(row.requestedAt).toISOString(),
    completed_at: row.completedAt === null ? null : new Date(row.completedAt).toISOString(),
    events_to_scan: row.throughSeq - row.fromSeq,
    events_scanned: row.cursorSeq - row.fromSeq,
    events_erased: row.eventsErased,
  };
}
