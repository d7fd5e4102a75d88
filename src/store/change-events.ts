/**
 * What a change channel reports (store/postgres/changes.ts): the listener calls these, and knows
 * nothing of who keeps what it hears.
 */
export interface ChangeEvents {
  /** The channel is up and verified; `roundTrip` resolves once every commit made before it was sent has been reported. */
  opened(roundTrip: () => Promise<void>): void;
  /** The channel dropped: changes may go unreported until `opened` again. */
  lost(): void;
  /** A commit moved a workspace's head to `seq`. */
  headMoved(workspaceId: string, seq: number): void;
  /** An API key was changed or deleted. */
  keyChanged(keyId: string): void;
}
