import { RoundTrips } from './round-trips.ts';

/**
 * How far what was heard may be believed right now:
 * - 'heard': the channel is up, so every change is being heard (SQLite: no other process wrote
 *   since what is kept was learned);
 * - 'down': Postgres, the channel is not up (not yet open, or lost): changes may go unheard;
 * - 'unknown': SQLite, whether another process wrote cannot be told now (a transaction of this
 *   process holds the writing connection): believe nothing kept.
 */
export type Trust = 'heard' | 'down' | 'unknown';

/**
 * The one state machine behind everything this process keeps because a channel would tell it of
 * a change: the feeds' heads (FeedHeads) and the verified API keys (VerifiedKeys).
 *
 * Postgres: a channel (listenForChanges, through ChangeWatch) tells this process of every
 * commit and every key change once it is `open`; when it drops (`lose`), changes may go unheard
 * until it is back, so nothing learned before can be believed as heard. Each user decides what
 * that means for it: heads forget everything (`whenLost`); keys are kept, but only for a short
 * time once what they were kept under is no longer `unbroken`.
 * `epoch` counts opens and losses: what a lookup or a read begun at `mark()` found may be believed
 * as heard only if the channel stayed up from then on (`unbroken`).
 *
 * SQLite has no channel, and this process's own commits need none; whether another process (the
 * CLI, an application publishing with the library) wrote to the file since is one pragma away
 * (`othersWrites`: Store.othersWritesVersion). The channel counts as up while that is known;
 * each `check` reads it, and when another process wrote, everything heard before is forgotten (a
 * loss and a reopen, then `whenOthersWrote`). While it cannot be told, nothing kept is believed.
 */
export class ChannelTrust {
  #live = false;
  #epoch = 0;
  #othersVersion: string | undefined;
  readonly #whenLost: Array<() => void> = [];
  readonly #whenOthersWrote: Array<() => void> = [];
  readonly #whenOpened: Array<() => void> = [];
  /** Postgres: round trips on the channel (set by `open`); SQLite needs none. */
  readonly roundTrips = new RoundTrips();

  /** `othersWrites` (SQLite): changes whenever another process wrote; undefined when that cannot be told now. */
  constructor(private readonly othersWrites?: () => string | undefined) {}

  get live(): boolean {
    return this.#live;
  }

  /** How far what was heard may be believed now (SQLite: forgets everything first if another process wrote). */
  check(): Trust {
    const othersWrites = this.othersWrites;
    if (!othersWrites) return this.#live ? 'heard' : 'down';
    const version = othersWrites();
    if (version === undefined) return 'unknown';
    if (version !== this.#othersVersion) {
      this.#othersVersion = version;
      this.lose();
      this.open(); // no round trip: the version was read from the file just now
      for (const forget of this.#whenOthersWrote) forget();
    }
    return 'heard';
  }

  /** Taken before a lookup or a read whose result may be kept as heard: a token for `unbroken`. */
  mark(): number | undefined {
    return this.check() === 'heard' ? this.#epoch : undefined;
  }

  /** Whether the channel was up at `mark` and has stayed up since: every change meanwhile was heard. */
  unbroken(mark: number | undefined): boolean {
    return mark !== undefined && mark === this.#epoch && this.#live;
  }

  /**
   * The channel is up and verified: from now on every change will be heard, and every change
   * committed before `roundTrip` is sent has been heard once it is back (it rejects if it cannot tell).
   */
  open(roundTrip?: () => Promise<void>): void {
    this.#epoch++;
    this.#live = true;
    this.roundTrips.use(roundTrip);
    for (const opened of this.#whenOpened) opened();
  }

  /** `opened` runs each time the channel is up again (SQLite: also right after another process's write was noticed). */
  whenOpened(opened: () => void): void {
    this.#whenOpened.push(opened);
  }

  /** The channel dropped: changes may go unheard, so nothing heard so far can be believed as heard. */
  lose(): void {
    this.#epoch++;
    this.#live = false;
    for (const forget of this.#whenLost) forget();
  }

  /** `forget` runs at every loss of the channel (SQLite: also when another process wrote). */
  whenLost(forget: () => void): void {
    this.#whenLost.push(forget);
  }

  /** `forget` runs when (SQLite) another process wrote: anything it kept may have been changed by that write. */
  whenOthersWrote(forget: () => void): void {
    this.#whenOthersWrote.push(forget);
  }
}
