/**
 * How this process learns of other processes' writes (ChangeStore), and the read replicas: where
 * the databases differ here, the port says so as a capability, never as a name.
 */
import type { Logger } from '../../base/log.ts';

/** A read replica as the service sees it now (/readyz, logs). */
export interface ReplicaStatus {
  /** `replica N (host:port/database)`: never credentials. */
  name: string;
  serving: boolean;
  /** Why it does not serve. */
  reason?: string;
  /** How far behind the primary its last applied commit was, at the last probe (null: nothing applied since it started). */
  lagMs?: number | null;
}

/** Listens for changes (ChangeEvents) until stopped. */
export interface ChangeListener {
  stop(): Promise<void>;
}

export interface ChangeStore {
  /**
   * SQLite: a value that changes whenever another process committed to the file since this one
   * last looked (its own commits leave it alone); undefined when it cannot be told now. Absent
   * where a change channel tells instead (`listenForChanges`).
   */
  readonly othersWritesVersion?: () => string | undefined;
  /**
   * Postgres: tells `events` of every commit's new head and every key changed, by every instance
   * (listenForChanges of the Postgres folder). Absent where nothing else writes without this process knowing.
   */
  readonly listenForChanges?: (
    events: ChangeEvents,
    log: Logger,
    options?: { pingIntervalMs?: number; pingTimeoutMs?: number },
  ) => ChangeListener;
  /**
   * Read replicas (Postgres, DATABASE_READ_URLS) that serve catch-up pages (ReadReplicas):
   * none serves until `watch` probes them (the server does; the CLI and the library read the primary).
   */
  readonly replicas?: {
    status(): ReplicaStatus[];
    watch(log: Logger): { stop(): Promise<void> };
  };
}

/**
 * What a change channel (listenForChanges: Postgres LISTEN) reports to whoever keeps what
 * was heard: the channel itself coming and going, and the changes it carries. Storage reports
 * through these callbacks and imports nothing above it; the process's ChangeWatch
 * (ChangeWatch) implements them.
 */
export interface ChangeEvents {
  /**
   * The channel is up and verified: from now on every change will be reported. `roundTrip`
   * resolves once every change committed before it was sent has been reported (it rejects if it
   * cannot tell).
   */
  opened(roundTrip: () => Promise<void>): void;
  /** The channel dropped: changes may go unreported until `opened` again. */
  lost(): void;
  /** A commit moved the workspace's head (its last seq) to `seq`. */
  headMoved(workspaceId: string, seq: number): void;
  /** The API key was changed or deleted (a revocation, an operator's SQL). */
  keyChanged(keyId: string): void;
}
