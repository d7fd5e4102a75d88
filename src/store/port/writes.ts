/** The writes that must read first in their own transaction (WriteStore): an operation's rule runs between the read and the write. */
import type { EndpointRow } from './webhooks.ts';
import type { KeyListRow, NewKeyRow } from './keys.ts';

/** The writes that read before they write, in one transaction (Store.write): an operation's rule runs between them. */
export interface WriteTx {
  /** Until this transaction ends, other such writes of the workspace wait (a count stays true until the insert commits). */
  lockWorkspace(workspaceId: string): Promise<void>;
  /** Until this transaction ends, other such writes for the endpoint wait. */
  lockEndpoint(endpointId: string): Promise<void>;
  findEndpoint(workspaceId: string, url: string): Promise<EndpointRow | undefined>;
  countEndpoints(workspaceId: string): Promise<number>;
  insertEndpoint(row: EndpointRow): Promise<void>;
  updateEndpoint(id: string, changes: Partial<EndpointRow>): Promise<void>;
  removeEndpoint(id: string): Promise<void>;
  /** An endpoint's pending deliveries, counted up to `max`. */
  pendingCountUpTo(endpointId: string, max: number): Promise<number>;
  /** Queues these events for one endpoint, due now, skipping those already pending for it; how many were queued. */
  queueDeliveries(endpointId: string, workspaceId: string, events: Array<{ seq: number; id: string }>, now: number): Promise<number>;
  countActiveKeys(workspaceId: string): Promise<number>;
  insertKey(row: NewKeyRow): Promise<void>;
  findKey(workspaceId: string, keyId: string): Promise<KeyListRow | undefined>;
}

export interface WriteStore {
  /** Reads, then writes, in one transaction, run again on a transient conflict. */
  write<T>(work: (tx: WriteTx) => Promise<T>): Promise<T>;
}
