/**
 * What this process knows of each workspace's head (its last seq), so that a poll whose cursor is
 * already there is answered "nothing new" without a query. Most polls of a tailing client are
 * that; on Postgres each one was a round trip or two (bench/README.md in git history, change 11).
 *
 * A head is known only while a channel tells this process of every commit in the database:
 * Postgres NOTIFY (store/head-listener.ts), sent by the very statement that moves a workspace's
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
  /** Postgres: one round trip on the channel (set by `open`); SQLite needs none. */
  #roundTrip: (() => Promise<void>) | undefined;
  /** Round trips sent so far, and the last one back in order: see `ticket`. */
  #sent = 0;
  #back = 0;
  #inFlight: { n: number; done: Promise<boolean> } | undefined;
  #next: { done: Promise<boolean>; settle: (ok: boolean) => void } | undefined;

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

  /** Taken when a request arrives: `nothingAfterNow` then counts every commit made before it. */
  ticket(): number {
    return this.#sent;
  }

  /**
   * `nothingAfter`, counting every commit made before `ticket` was taken, this process's or
   * another's: on Postgres it waits for a round trip on the channel sent after that (shared with
   * every request waiting then). False sends the request to the database.
   */
  async nothingAfterNow(workspaceId: string, seq: number, ticket: number): Promise<boolean> {
    if (!this.nothingAfter(workspaceId, seq)) return false;
    if (this.#roundTrip === undefined) return true; // SQLite: nothingAfter checked the file itself
    return (await this.#heardAllBefore(ticket)) && this.nothingAfter(workspaceId, seq);
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

  /**
   * The channel is up and verified: from now on every commit will be heard, and every commit made
   * before `roundTrip` is sent has been heard once it is back (it rejects if it cannot tell).
   */
  open(roundTrip?: () => Promise<void>): void {
    this.#epoch++;
    this.#live = true;
    this.#roundTrip = roundTrip;
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
      this.open(); // SQLite: no round trip, the version was read from the file just now
    }
    return true;
  }

  /** True once a round trip sent after `ticket` is back; false if it failed. */
  #heardAllBefore(ticket: number): Promise<boolean> | boolean {
    if (this.#back > ticket) return true;
    if (this.#inFlight && this.#inFlight.n > ticket) return this.#inFlight.done;
    if (!this.#next) {
      let settle!: (ok: boolean) => void;
      this.#next = { done: new Promise<boolean>((resolve) => (settle = resolve)), settle };
      // Sent after this turn of the event loop, so that every request arriving in it shares it.
      if (!this.#inFlight) setImmediate(() => this.#send());
    }
    return this.#next.done;
  }

  #send(): void {
    const waiting = this.#next;
    if (!waiting || this.#inFlight) return;
    this.#next = undefined;
    const n = ++this.#sent;
    this.#inFlight = { n, done: waiting.done };
    const roundTrip = this.#roundTrip;
    const sent = roundTrip ? Promise.resolve().then(roundTrip).then(() => true, () => false) : Promise.resolve(false);
    void sent.then((ok) => {
      this.#inFlight = undefined;
      if (ok) this.#back = n;
      waiting.settle(ok);
      this.#send(); // those who arrived meanwhile
    });
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
