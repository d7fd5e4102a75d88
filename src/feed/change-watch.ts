import { VerifiedKeys } from '../auth/verified-keys.ts';
import { ChannelTrust } from '../changes/channel-trust.ts';
import { FeedHeads } from './heads.ts';
import type { ChangeEvents } from '../store/port/changes.ts';

/**
 * What this process hears of the changes anyone makes to its database, and what it keeps because
 * it would hear of them: the feeds' heads (FeedHeads) and the verified API keys
 * (VerifiedKeys), both believed as far as one channel trust says (ChannelTrust).
 * One per service, created with it (watchChanges, in createServices); the change channel's listener
 * (Store.listenForChanges) reports to it through its callbacks.
 */
export class ChangeWatch implements ChangeEvents {
  readonly trust: ChannelTrust;
  readonly heads: FeedHeads;
  readonly keys: VerifiedKeys;

  /** `othersWrites` (SQLite): changes whenever another process wrote to the file; undefined when that cannot be told now. */
  constructor(options: { othersWrites?: () => string | undefined } = {}) {
    this.trust = new ChannelTrust(options.othersWrites);
    this.heads = new FeedHeads(this.trust);
    this.keys = new VerifiedKeys(this.trust);
  }

  /** Whether the channel is up (Postgres: the listener's; SQLite: always, once checked). */
  get live(): boolean {
    return this.trust.live;
  }

  opened(roundTrip: () => Promise<void>): void {
    this.trust.open(roundTrip);
  }

  lost(): void {
    this.trust.lose();
  }

  headMoved(workspaceId: string, seq: number): void {
    this.heads.heard(workspaceId, seq);
  }

  keyChanged(keyId: string): void {
    this.keys.heard(keyId);
  }
}
