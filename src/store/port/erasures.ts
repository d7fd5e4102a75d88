/** What erasing a person asks of storage (ErasureStore): the erasures' log and progress, and the batches that rewrite events. */

export type ErasureState = 'pending' | 'running' | 'completed';

/** One erasure as stored (erasures table), decoded. */
export interface ErasureRow {
  id: string;
  workspaceId: string;
  status: ErasureState;
  /** Keyed hashes (hex) of the addresses, sorted: what the log keeps of them. */
  addressHashes: string[];
  /** The hashes joined: the same request (same addresses) finds its erasure again. */
  requestKey: string;
  /** The addresses, sealed by the service's secret while the erasure runs; null once completed. */
  sealedAddresses: string | null;
  requestedBy: string;
  requestedAt: number;
  completedAt: number | null;
  /** The seqs erased are after fromSeq and up to throughSeq; cursorSeq is the last one done. */
  fromSeq: number;
  throughSeq: number;
  cursorSeq: number;
  eventsErased: number;
  updatedAt: number;
}

/** An event that may carry an address (its text holds one of the needles), as stored. */
export interface StoredEnvelope {
  seq: number;
  envelope: string;
}

/** One batch's outcome, written in one short transaction with the erasure's progress. */
export interface ErasureBatch {
  id: string;
  workspaceId: string;
  /** The lease holder: the batch is written only while it holds the lease. */
  owner: string;
  rewrites: StoredEnvelope[];
  cursorSeq: number;
  now: number;
  /** The last batch: the erasure is completed and its sealed addresses cleared. */
  done: boolean;
}

export interface ErasureStore {
  erasures: {
    /**
     * One erasure request, decided while no other request of the workspace decides (a lock on the
     * workspace's row): `plan` sees the newest erasure of the same request key and answers the row
     * to insert, or undefined to answer that one (the same request twice makes one erasure).
     */
    begin(
      workspaceId: string,
      requestKey: string,
      plan: (latest: ErasureRow | undefined) => Omit<ErasureRow, 'updatedAt'> | undefined,
    ): Promise<{ erasure: ErasureRow; created: boolean }>;
    byId(workspaceId: string, id: string): Promise<ErasureRow | undefined>;
    /** The newest erasure of the workspace made for this request key. */
    latestFor(workspaceId: string, requestKey: string): Promise<ErasureRow | undefined>;
    /** The workspace's erasures, newest first. */
    list(workspaceId: string, limit: number): Promise<ErasureRow[]>;
    /** Every erasure not completed, oldest first (what a runner picks up). */
    unfinished(): Promise<ErasureRow[]>;
    /** Takes or renews the lease of an unfinished erasure until `until`; false when another holds it. */
    claim(id: string, owner: string, now: number, until: number): Promise<boolean>;
    /**
     * The events after `afterSeq` and up to `throughSeq` whose stored text holds one of `needles`
     * (lower case), ignoring ASCII case: a superset of those carrying the addresses. A plain read
     * that no write waits for.
     */
    candidates(workspaceId: string, afterSeq: number, throughSeq: number, needles: readonly string[]): Promise<StoredEnvelope[]>;
    /** Writes a batch's rewritten events and the progress in one transaction; false (nothing written) when the lease is lost. */
    commitBatch(batch: ErasureBatch): Promise<boolean>;
    /** Drops the pages read ahead of the workspace's feed (another instance's erasure rewrote some). */
    forgetReadAhead(workspaceId: string): void;
    /** Erasures whose progress moved after `sinceMs` (what other instances' caches forget). */
    movedSince(sinceMs: number): Promise<Array<{ workspaceId: string; updatedAt: number }>>;
  };
}
