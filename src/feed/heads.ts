import type { ChannelTrust } from '../changes/channel-trust.ts';

/**
 * What this process knows of each workspace's head (its last seq), so that a poll whose cursor is
 * already there is answered "nothing new" without a query. Most polls of a tailing client are
 * that; on Postgres each one was a round trip or two (bench/README.md in git history, change 11).
 *
 * A head is known only while a channel tells this process of every commit in the database:
 * Postgres NOTIFY (listenForChanges), sent by the very statement that moves a workspace's
 * counter, so it is delivered exactly when that commit is (in commit order) and never for a
 * rollback. While the channel is up, a head can only be behind the truth by the commits still
 * on their way to this process, so a request does not answer from it before `nothingAfterNow`
 * made one round trip on the channel, sent after the request arrived: Postgres hands a listening
 * connection the notifications of every commit made before it reads a statement, ahead of that
 * statement's answer. So an event whose emit was answered (by any instance) before a poll arrived
 * is in that poll, as a read would have it; one round trip serves every request waiting for it,
 * and it wakes no backend but the listener's. Heads come from:
 * - `heard`: a notification, or this process's own commit (so an emit answered here is seen by
 *   the next poll here, before the notification comes back);
 * - `learn`: a read that found nothing past a seq (a short unrestricted page), if the channel
 *   stayed up from before the read started to now: a commit after the read's snapshot is then
 *   either already heard (the larger value stays) or still to come.
 * When the channel drops, everything is forgotten until it is back (a commit meanwhile would go
 * unheard). And a head is trusted for TRUST_MS after it was last confirmed: a channel that
 * failed without a sign costs at most that much staleness, never a feed stuck on "nothing new".
 *
 * SQLite has no channel, but this process's own commits need none, and whether another process
 * (the CLI, an application publishing with the library) has written to the file since is one
 * pragma away. Heads are used only once that was checked, and forgotten whenever it says another
 * process wrote. (An append through the server's own handle that bypasses the group commit, which
 * nothing in this service does, would go unheard: TRUST_MS bounds it.)
 *
 * Whether the channel is up, and (SQLite) whether another process wrote, is the `trust`'s to say
 * (ChannelTrust, shared with the verified keys); this class keeps the heads.
 */
export class FeedHeads {
  #heads = new Map<string, { seq: number; confirmedAt: number }>();
  readonly #onHeard: Array<(workspaceId: string, mailboxes?: ReadonlySet<string | null>) => void> = [];
  readonly #echoes = new OwnCommitEchoes((workspaceId) => this.#tell(workspaceId, undefined));

  constructor(
    private readonly trust: ChannelTrust,
    private readonly options: { trustMs?: number; maxWorkspaces?: number; now?: () => number } = {},
  ) {
    // A commit made while the channel was down went unheard: no head known before can be trusted.
    trust.whenLost(() => {
      this.#heads.clear();
      this.#echoes.forget();
    });
  }

  /** True when this process knows that no event of the workspace is past `seq`. */
  nothingAfter(workspaceId: string, seq: number): boolean {
    const head = this.known(workspaceId);
    return head !== undefined && head <= seq;
  }

  /** The workspace's head, when this process knows it now (under the same trust as `nothingAfter`). */
  known(workspaceId: string): number | undefined {
    if (this.trust.check() !== 'heard') return undefined;
    const head = this.#heads.get(workspaceId);
    return head !== undefined && this.#now() - head.confirmedAt <= this.#trustMs() ? head.seq : undefined;
  }

  /**
   * The last head this process heard or learned for the workspace, trusted now or not: a lower
   * bound of the real one, which only rises. A hint (is a reader a page or more behind?), never a
   * proof.
   */
  atLeast(workspaceId: string): number | undefined {
    return this.#heads.get(workspaceId)?.seq;
  }

  /** Taken when a request arrives: `nothingAfterNow` then counts every commit made before it. */
  ticket(): number {
    return this.trust.roundTrips.ticket();
  }

  /**
   * `nothingAfter`, counting every commit made before `ticket` was taken, this process's or
   * another's: on Postgres it waits for a round trip on the channel sent after that (shared with
   * every request waiting then). False sends the request to the database.
   */
  async nothingAfterNow(workspaceId: string, seq: number, ticket: number): Promise<boolean> {
    if (!this.nothingAfter(workspaceId, seq)) return false;
    if (!this.trust.roundTrips.offered) return true; // SQLite: nothingAfter checked the file itself
    return (await this.trust.roundTrips.heardAllBefore(ticket)) && this.nothingAfter(workspaceId, seq);
  }

  /** Taken before a read whose result may be learned: a token that `learn` checks. */
  mark(): number | undefined {
    return this.trust.mark();
  }

  /** A read begun at `mark` found no event of the workspace past `seq`. */
  learn(workspaceId: string, seq: number, mark: number | undefined, readStartedAt: number): void {
    if (!this.trust.unbroken(mark)) return;
    this.#raise(workspaceId, seq, readStartedAt);
  }

  /**
   * A commit moved the workspace's head to `seq`: this process's own, with its events' `mailboxes`
   * (the group commit), or a notification (Postgres), whose mailboxes are not known. Listeners
   * (HeldReads) hear each commit once, with its mailboxes when known: a notification of this
   * process's own commit is its echo, let go (OwnCommitEchoes).
   */
  heard(workspaceId: string, seq: number, mailboxes?: ReadonlySet<string | null>): void {
    if (this.trust.live) this.#raise(workspaceId, seq, this.#now());
    // Whether or not the head can be kept, a commit happened: held reads look again.
    if (mailboxes === undefined) return this.#echoes.notified(workspaceId, seq);
    if (this.trust.roundTrips.offered) this.#echoes.own(workspaceId, seq);
    this.#tell(workspaceId, mailboxes);
  }

  /** This process is about to append to these workspaces (GroupCommit): a notification heard meanwhile may be its own echo, and waits. */
  appending(workspaceIds: Iterable<string>): void {
    this.#echoes.appending(workspaceIds);
  }

  /** Its append to these workspaces is over (committed and heard, or failed): what waited is told. */
  appendSettled(workspaceIds: Iterable<string>): void {
    this.#echoes.settled(workspaceIds);
  }

  /** `listener` runs at every commit heard (a notification or this process's own), trusted or not, with its events' mailboxes when known. */
  whenHeard(listener: (workspaceId: string, mailboxes?: ReadonlySet<string | null>) => void): void {
    this.#onHeard.push(listener);
  }

  #tell(workspaceId: string, mailboxes: ReadonlySet<string | null> | undefined): void {
    for (const listener of this.#onHeard) listener(workspaceId, mailboxes);
  }

  now(): number {
    return this.#now();
  }

  #raise(workspaceId: string, seq: number, confirmedAt: number): void {
    const head = this.#heads.get(workspaceId);
    if (head) {
      if (seq > head.seq) head.seq = seq;
      if (confirmedAt > head.confirmedAt) head.confirmedAt = confirmedAt;
      return;
    }
    // Bounded: forgetting a head only sends its readers back to the database.
    if (this.#heads.size >= (this.options.maxWorkspaces ?? MAX_WORKSPACES)) this.#heads.delete(this.#heads.keys().next().value!);
    this.#heads.set(workspaceId, { seq, confirmedAt });
  }

  #now(): number {
    return this.options.now ? this.options.now() : performance.now();
  }

  #trustMs(): number {
    return this.options.trustMs ?? TRUST_MS;
  }
}

/**
 * Postgres announces every commit on the channel, this process's own too, which it heard already
 * with their events' mailboxes: a restricted poll not woken by its own commit (another mailbox)
 * would be woken by the echo, and read for nothing. Own commits are remembered by workspace and last
 * seq (unique per commit) until their echo comes, and the echo is let go. The echo may come before
 * the append's own answer (two connections): a notification heard while this process has an append
 * to that workspace in flight is held back until the append settles, then let go if it was the
 * echo, else told. Bounded: past OWN_COMMITS_KEPT per workspace (or OWN_COMMITS_WORKSPACES), an echo
 * is told like any notification, which costs reads, never a wake.
 */
class OwnCommitEchoes {
  readonly #own = new Map<string, Set<number>>();
  readonly #inFlight = new Map<string, number>();
  readonly #heldBack = new Map<string, number[]>();

  constructor(private readonly tell: (workspaceId: string) => void) {}

  own(workspaceId: string, seq: number): void {
    const held = this.#heldBack.get(workspaceId);
    const early = held?.indexOf(seq) ?? -1;
    if (early >= 0) return void held!.splice(early, 1);
    let seqs = this.#own.get(workspaceId);
    if (!seqs) {
      if (this.#own.size >= OWN_COMMITS_WORKSPACES) this.#own.delete(this.#own.keys().next().value!);
      this.#own.set(workspaceId, (seqs = new Set()));
    }
    if (seqs.size >= OWN_COMMITS_KEPT) seqs.delete(seqs.values().next().value!);
    seqs.add(seq);
  }

  notified(workspaceId: string, seq: number): void {
    const seqs = this.#own.get(workspaceId);
    if (seqs?.delete(seq)) {
      if (seqs.size === 0) this.#own.delete(workspaceId);
      return;
    }
    const held = this.#heldBack.get(workspaceId);
    if ((this.#inFlight.get(workspaceId) ?? 0) > 0 && (held?.length ?? 0) < OWN_COMMITS_KEPT) {
      if (held) held.push(seq);
      else this.#heldBack.set(workspaceId, [seq]);
      return;
    }
    this.tell(workspaceId);
  }

  appending(workspaceIds: Iterable<string>): void {
    for (const workspaceId of workspaceIds) this.#inFlight.set(workspaceId, (this.#inFlight.get(workspaceId) ?? 0) + 1);
  }

  settled(workspaceIds: Iterable<string>): void {
    for (const workspaceId of workspaceIds) {
      const left = (this.#inFlight.get(workspaceId) ?? 1) - 1;
      if (left > 0) {
        this.#inFlight.set(workspaceId, left);
        continue;
      }
      this.#inFlight.delete(workspaceId);
      const held = this.#heldBack.get(workspaceId);
      this.#heldBack.delete(workspaceId);
      if (held && held.length > 0) this.tell(workspaceId);
    }
  }

  /** The channel was lost: echoes may never come. */
  forget(): void {
    this.#own.clear();
  }
}

const OWN_COMMITS_KEPT = 256;
const OWN_COMMITS_WORKSPACES = 4096;
const TRUST_MS = 1000;
const MAX_WORKSPACES = 100_000;
