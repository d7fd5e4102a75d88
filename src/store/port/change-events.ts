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
