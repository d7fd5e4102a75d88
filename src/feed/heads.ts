/**
 * What this process knows of each workspace's head (its last seq), so that a poll whose cursor is
 * already there is answered "nothing new" without a query. Most polls of a tailing client are
 * that; on Postgres each one was a round trip or two (bench/README.md, change 11).
 *
 * A head is known only while a channel tells this process of every commit in the database:
 * Postgres NOTIFY (store/head-listener.ts), sent by the very statement that moves a workspace's
 * counter, so it is delivered exactly when that commit is (in commit order) and never for a
 * rollback. While the channel is up, a head can only be behind the truth by the commits still
 * on their way to this process: answering from it is answering as a read a moment earlier
 * would have, and the cursor handed back is the caller's own, so nothing is ever skipped.
 * Heads come from:
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
 * pragma away (`othersWrites`: store/db.ts othersWritesVersion). Heads are used only once that
 * was checked, and forgotten whenever it says another process wrote. (An append through the
 * server's own handle that bypasses the group commit, which nothing in this service does, would
 * go unheard: TRUST_MS bounds it.)
 */
export class FeedHeads {
  #heads = new Map<string, { seq: number; confirmedAt: number }>();
  #live = false;
  #epoch = 0;
  #othersVersion: string | undefined;

  constructor(
    private readonly options: {
      trustMs?: number;
      maxWorkspaces?: number;
      now?: () => number;
      /** SQLite: changes whenever another process wrote; undefined when that cannot be told now. */
      othersWrites?: () => string | undefined;
    } = {},
  ) {}

  get live(): boolean {
    return this.#live;
  }

  /** True when this process knows that no event of the workspace is past `seq`. */
  nothingAfter(workspaceId: string, seq: number): boolean {
    if (!this.#checked()) return false;
    const head = this.#heads.get(workspaceId);
    return head !== undefined && head.seq <= seq && this.#now() - head.confirmedAt <= this.#trustMs();
  }

  /** Taken before a read whose result may be learned: a token that `learn` checks. */
  mark(): number | undefined {
    return this.#checked() ? this.#epoch : undefined;
  }

  /** A read begun at `mark` found no event of the workspace past `seq`. */
  learn(workspaceId: string, seq: number, mark: number | undefined, readStartedAt: number): void {
    if (mark === undefined || mark !== this.#epoch || !this.#live) return;
    this.#raise(workspaceId, seq, readStartedAt);
  }

  /** A commit moved the workspace's head to `seq` (a notification, or this process's own commit). */
  heard(workspaceId: string, seq: number): void {
    if (this.#live) this.#raise(workspaceId, seq, this.#now());
  }

  /** The channel is up and verified: from now on every commit will be heard. */
  open(): void {
    this.#epoch++;
    this.#live = true;
  }

  /** The channel dropped: commits may go unheard, so nothing known so far can be trusted. */
  lose(): void {
    this.#epoch++;
    this.#live = false;
    this.#heads.clear();
  }

  now(): number {
    return this.#now();
  }

  /** Live, and (SQLite) no other process has written since what is known was learned. */
  #checked(): boolean {
    const othersWrites = this.options.othersWrites;
    if (!othersWrites) return this.#live;
    const version = othersWrites();
    if (version === undefined) return false;
    if (version !== this.#othersVersion) {
      this.#othersVersion = version;
      this.lose();
      this.open();
    }
    return true;
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

const TRUST_MS = 1000;
const MAX_WORKSPACES = 100_000;
