import { RateLimitedError } from '../base/errors.ts';

/** What holds a read: an `event_feed` long-poll (`Prefer: wait`) or an event stream (counted apart in the metrics). */
export type HeldKind = 'long_poll' | 'stream';

/** Why a held read stopped waiting. */
export type Wake = 'moved' | 'timeout' | 'closing' | 'aborted';

export interface HeldReadLimits {
  /** Most reads held at once in this process (long-polls and streams). */
  max: number;
  /** Most held at once by one key. */
  perKey: number;
  /** Most held at once by all the keys of one workspace (keys it creates do not multiply its share). */
  perWorkspace: number;
  /** A stream whose client has not taken what was written for this long is disconnected (streamEventFeed). */
  stallMs: number;
}

/** A place among the held reads, taken before the first wait and given back when the request ends. */
export interface HeldSlot {
  release(): void;
}

/** One wait for a workspace to move, registered before the read it follows (so no commit falls in between). */
export interface Watch {
  /** Resolves at the first head move of the workspace heard since the watch began (or at once if one was), the deadline, shutdown or the abort. */
  until(deadlineMs: number, signal?: AbortSignal): Promise<Wake>;
  /** When the move that woke it was heard (performance.now()); every waiter woken by one move has the same. */
  readonly wokenAt: number | undefined;
  cancel(): void;
}

interface Waiter {
  /** The mailboxes whose events it waits for; null: any event of the workspace. */
  mailboxes: ReadonlySet<string> | null;
  moved: boolean;
  wokenAt?: number;
  wake?: (why: Wake) => void;
}

/**
 * The reads held open until something happens in their workspace: `event_feed` long-polls
 * (`Prefer: wait`) and event streams. A request first takes a slot (bounded per key and in all:
 * a held read is an open connection that the gate cannot evict), then, before each read, a `watch`
 * on its workspace: any head move heard after that wakes it, so an event committed between the
 * read and the wait is never slept through. The woken request reads again: what it may see (its
 * mailboxes) is the read's to decide, not this class's.
 *
 * Moves come from FeedHeads.heard (this process's own commits, and on Postgres every other
 * instance's through the channel), from `othersWrote` (SQLite: another process wrote to the file,
 * workspace unknown) and from `channelLost` (commits may go unheard: every waiter reads again, and
 * re-reads every `recheckMs` while the channel is down).
 */
export class HeldReads {
  readonly #byWorkspace = new Map<string, Set<Waiter>>();
  readonly #perKey = new Map<string, number>();
  readonly #perWorkspace = new Map<string, number>();
  /** SQLite: each waited-on workspace's head as last looked up after another process wrote. */
  readonly #storedHeads = new Map<string, number>();
  #lookingUp: Promise<void> | undefined;
  #lookAgain = false;
  #held = 0;
  readonly #heldByKind: Record<HeldKind, number> = { long_poll: 0, stream: 0 };
  #closing = false;
  #channelDown: boolean;
  #probe: ReturnType<typeof setInterval> | undefined;

  constructor(
    readonly limits: HeldReadLimits,
    private readonly options: {
      /** Postgres: true until the change channel opens (commits of other instances are not heard yet). */
      channelDown?: boolean;
      /** SQLite: asks whether another process wrote to the file (ChannelTrust.check, which then calls `othersWrote`); run every `probeMs` while reads wait. */
      probe?: () => void;
      /** SQLite: the heads of these workspaces as stored, to tell which ones another process's write moved. */
      headsOf?: (workspaceIds: string[]) => Promise<Map<string, number>>;
      probeMs?: number;
      recheckMs?: number;
      now?: () => number;
    } = {},
  ) {
    this.#channelDown = options.channelDown ?? false;
  }

  /** True once the server shuts down. */
  get closing(): boolean {
    return this.#closing;
  }

  /** Reads held now (long-polls waiting and streams open). */
  get held(): number {
    return this.#held;
  }

  /** Reads of this kind held now (metrics). */
  heldOf(kind: HeldKind): number {
    return this.#heldByKind[kind];
  }

  /** Takes a slot for the key, or refuses with 429 when the key, its workspace or the process holds its most. */
  hold(holder: { keyId: string; workspaceId: string }, kind: HeldKind = 'long_poll'): HeldSlot {
    if (this.#closing)
      throw new RateLimitedError('draining', 'the server is shutting down; retry in 1 s (another instance may answer)', {
        'Retry-After': '1',
      });
    const { keyId, workspaceId } = holder;
    const ofKey = this.#perKey.get(keyId) ?? 0;
    if (ofKey >= this.limits.perKey) throw tooMany(`this key already holds ${this.limits.perKey} waiting reads (long-polls and streams)`);
    const ofWorkspace = this.#perWorkspace.get(workspaceId) ?? 0;
    if (ofWorkspace >= this.limits.perWorkspace)
      throw tooMany(
        `this key's workspace already holds ${this.limits.perWorkspace} waiting reads (long-polls and streams, all its keys together)`,
      );
    if (this.#held >= this.limits.max) throw tooMany('the server holds as many waiting reads as it may');
    this.#perKey.set(keyId, ofKey + 1);
    this.#perWorkspace.set(workspaceId, ofWorkspace + 1);
    this.#held++;
    this.#heldByKind[kind]++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#held--;
        this.#heldByKind[kind]--;
        countDown(this.#perKey, keyId);
        countDown(this.#perWorkspace, workspaceId);
      },
    };
  }

  /**
   * Watches the workspace for a move, from now. `mailboxes` (a restricted key's): a commit known to
   * hold events of other mailboxes only does not wake it (it would read again for nothing); a
   * commit whose mailboxes are not known (another instance's, another process's) does.
   */
  watch(workspaceId: string, mailboxes: readonly string[] | null = null): Watch {
    const waiter: Waiter = { moved: false, mailboxes: mailboxes === null ? null : new Set(mailboxes) };
    let waiters = this.#byWorkspace.get(workspaceId);
    if (!waiters) this.#byWorkspace.set(workspaceId, (waiters = new Set()));
    waiters.add(waiter);
    this.#startProbing();
    const forget = () => {
      waiters.delete(waiter);
      if (waiters.size === 0 && this.#byWorkspace.get(workspaceId) === waiters) this.#byWorkspace.delete(workspaceId);
      if (this.#byWorkspace.size === 0) this.#stopProbing();
    };
    return {
      get wokenAt() {
        return waiter.wokenAt;
      },
      cancel: forget,
      until: (deadlineMs, signal) => {
        if (this.#closing) return settle('closing');
        if (waiter.moved) return settle('moved');
        if (signal?.aborted) return settle('aborted');
        const wait = this.#channelDown
          ? Math.min(deadlineMs - this.#now(), this.options.recheckMs ?? RECHECK_MS)
          : deadlineMs - this.#now();
        if (wait <= 0) return settle(this.#channelDown && this.#now() < deadlineMs ? 'moved' : 'timeout');
        return new Promise<Wake>((resolve) => {
          const timer = setTimeout(() => done(this.#channelDown && this.#now() < deadlineMs ? 'moved' : 'timeout'), wait);
          const onAbort = () => done('aborted');
          signal?.addEventListener('abort', onAbort, { once: true });
          function done(why: Wake) {
            clearTimeout(timer);
            signal?.removeEventListener('abort', onAbort);
            waiter.wake = undefined;
            forget();
            resolve(why);
          }
          waiter.wake = done;
        });
      },
    };
    function settle(why: Wake): Promise<Wake> {
      forget();
      return Promise.resolve(why);
    }
  }

  /**
   * A commit moved the workspace's head: its waiters read again, but those waiting for other
   * mailboxes than every one the commit's events are in (`mailboxes`, when known; null for an
   * event in no mailbox).
   */
  moved(workspaceId: string, mailboxes?: ReadonlySet<string | null>): void {
    const waiters = this.#byWorkspace.get(workspaceId);
    if (!waiters) return;
    const at = this.#now();
    for (const waiter of [...waiters]) if (concerns(waiter, mailboxes)) wake(waiter, 'moved', at);
  }

  /**
   * SQLite: another process wrote to the file, to workspaces unknown. Rather than send every
   * waiter back to the database, the waited-on workspaces' heads are looked up in one statement
   * (per few hundred), and only those whose head moved since the last look (or that were not looked
   * at yet) are woken. A waiter's read began before its head was looked up here, or it saw that
   * head: a commit after its read moves the head past what was recorded, so it is woken.
   * Without `headsOf`, everyone is woken. One lookup at a time; writes noticed meanwhile, one more.
   */
  othersWrote(): void {
    const headsOf = this.options.headsOf;
    if (!headsOf) return this.#wakeAll('moved');
    if (this.#lookingUp) {
      this.#lookAgain = true;
      return;
    }
    this.#lookingUp = (async () => {
      do {
        this.#lookAgain = false;
        const workspaces = [...this.#byWorkspace.keys()];
        // Kept only for the workspaces waited on now (a woken waiter is back before the next look).
        for (const workspaceId of this.#storedHeads.keys()) if (!this.#byWorkspace.has(workspaceId)) this.#storedHeads.delete(workspaceId);
        if (workspaces.length === 0) break;
        const heads = await headsOf(workspaces).catch(() => undefined);
        for (const workspaceId of workspaces) {
          const head = heads?.get(workspaceId);
          const seen = this.#storedHeads.get(workspaceId);
          if (head !== undefined) this.#storedHeads.set(workspaceId, head);
          if (head === undefined || seen === undefined || head !== seen) this.moved(workspaceId);
        }
      } while (this.#lookAgain);
    })().finally(() => (this.#lookingUp = undefined));
  }

  /** The channel dropped: commits may go unheard until it is back, so everyone reads again, and keeps re-reading while it is down. */
  channelLost(): void {
    this.#channelDown = true;
    this.#wakeAll('moved');
  }

  channelOpened(): void {
    this.#channelDown = false;
  }

  /** Shutdown: every held read is answered now, and no new one is held. */
  close(): void {
    this.#closing = true;
    this.#stopProbing();
    this.#wakeAll('closing');
  }

  /** Another process's write is found only by asking (SQLite): asked while someone waits, never otherwise. */
  #startProbing(): void {
    const probe = this.options.probe;
    if (!probe || this.#probe) return;
    this.#probe = setInterval(probe, this.options.probeMs ?? PROBE_MS);
    this.#probe.unref();
  }

  #stopProbing(): void {
    clearInterval(this.#probe);
    this.#probe = undefined;
  }

  #wakeAll(why: Wake): void {
    for (const waiters of [...this.#byWorkspace.values()]) for (const waiter of [...waiters]) wake(waiter, why);
  }

  #now(): number {
    return this.options.now ? this.options.now() : performance.now();
  }
}

/** Whether a commit in these mailboxes (undefined: not known) may hold an event the waiter may see. */
function concerns(waiter: Waiter, mailboxes: ReadonlySet<string | null> | undefined): boolean {
  if (waiter.mailboxes === null || mailboxes === undefined) return true;
  for (const mailbox of mailboxes) if (mailbox !== null && waiter.mailboxes.has(mailbox)) return true;
  return false;
}

function countDown(counts: Map<string, number>, name: string): void {
  const left = (counts.get(name) ?? 1) - 1;
  if (left === 0) counts.delete(name);
  else counts.set(name, left);
}

function wake(waiter: Waiter, why: Wake, at?: number): void {
  waiter.moved = true;
  waiter.wokenAt ??= at;
  waiter.wake?.(why);
}

const tooMany = (why: string) => new RateLimitedError('held_reads', `${why}; retry in 1 s`, { 'Retry-After': '1' });

/** SQLite: how often a process with waiting reads asks whether another process wrote (a pragma on its own connection). */
const PROBE_MS = 50;
/** While the channel is down, a held read reads again this often (a commit of another instance would go unheard). */
const RECHECK_MS = 1000;
