import { PAGE_MAX_BYTES } from '../limits/page-bytes.ts';
import type { StoredPage } from '../store/port.ts';
import type { FeedScope } from './scope.ts';

/** A page from memory: whole as it is, or only if nothing was committed past `wholeIfNothingAfter`. */
export interface RecentPage {
  page: StoredPage;
  wholeIfNothingAfter?: number;
}

/** An event this process committed: its seq is the run's first seq plus its index. */
export interface RecentEvent {
  mailboxId: string | null;
  type: string;
  occurredAtMs: number;
  envelope: string;
}

interface Run {
  firstSeq: number;
  mailboxIds: Array<string | null>;
  types: string[];
  occurredAtMs: number[];
  /** The envelopes' JSON text: the very strings the append stored, kept alive rather than copied. */
  chunks: string[];
  /** Their length in characters (what memory is bounded by). */
  chars: number;
  addedAt: number[];
}

/**
 * The last events this process committed to each workspace, so that tailing readers, who only
 * ever ask for what was just written, are answered without a query (on Postgres each one is a
 * round trip that wakes a backend: bench/README.md in git history, change 14).
 *
 * A committed event never changes at its seq, so what is kept here is the truth; what it cannot
 * tell alone is whether more came after. A page is served from here only when it is whole:
 * - it covers every seq from the cursor on (a run of consecutive seqs; a gap sends the read to
 *   the database), and
 * - it is full (`limit` events for the key), or the heads (FeedHeads) know nothing was
 *   committed past the run's last seq (the caller asks them: `wholeIfNothingAfter`).
 * So a page from here is the one a read at that moment would have given: a short page still means
 * nothing else was there (the MCP text and the web view say "à jour" on it). No retention watermark
 * to read either: an event stays here at most MAX_AGE_MS by `now`, the service's clock, by which
 * retention only prunes events at least 30 days old (MIN_RETENTION_DAYS), so nothing held here is pruned.
 *
 * Bounded: EVENTS_PER_WORKSPACE per workspace, MAX_CHARS of envelope text in all (the workspace
 * least recently appended to goes first), MAX_AGE_MS each. Forgetting only sends readers to the
 * database.
 */
export class RecentEvents {
  #runs = new Map<string, Run>();
  #chars = 0;

  constructor(private readonly now: () => number) {}

  /** Committed: `events` took the seqs firstSeq, firstSeq + 1, … of the workspace's feed. */
  committed(workspaceId: string, firstSeq: number, events: readonly RecentEvent[]): void {
    if (events.length === 0) return;
    let run = this.#runs.get(workspaceId);
    if (run && firstSeq !== run.firstSeq + run.chunks.length) {
      // Another instance committed in between (or this is old news): start again from here.
      this.#drop(workspaceId, run);
      run = undefined;
    }
    if (!run) run = { firstSeq, mailboxIds: [], types: [], occurredAtMs: [], chunks: [], chars: 0, addedAt: [] };
    else this.#runs.delete(workspaceId); // re-inserted below: the map stays in order of last append
    this.#runs.set(workspaceId, run);
    const at = this.now();
    for (const event of events) {
      const chunk = event.envelope;
      run.mailboxIds.push(event.mailboxId);
      run.types.push(event.type);
      run.occurredAtMs.push(event.occurredAtMs);
      run.chunks.push(chunk);
      run.addedAt.push(at);
      run.chars += chunk.length;
      this.#chars += chunk.length;
    }
    this.#trimFront(run, run.chunks.length - EVENTS_PER_WORKSPACE);
    while (this.#chars > MAX_CHARS) {
      const [oldestId, oldest] = this.#runs.entries().next().value!;
      this.#drop(oldestId, oldest);
    }
  }

  /**
   * The page after `afterSeq` if it can be answered whole from here; undefined sends the read to
   * the database. Only the events in `scope`; the page stops at the byte cap like a read does
   * (the store's pageReader, PAGE_MAX_BYTES).
   */
  page(workspaceId: string, afterSeq: number, limit: number, scope: FeedScope, withFacts = false): RecentPage | undefined {
    const run = this.#runs.get(workspaceId);
    if (!run) return undefined;
    this.#trimFront(run, this.#expired(run));
    const start = afterSeq + 1 - run.firstSeq;
    if (start < 0 || start >= run.chunks.length) return undefined; // before the run, or nothing here after the cursor
    const picked: number[] = [];
    let bytes = -1; // n envelopes take n - 1 commas
    let cutAtByteCap = false;
    for (let i = start; i < run.chunks.length && picked.length < limit; i++) {
      if (!scope.includes(run.mailboxIds[i]!)) continue;
      const size = Buffer.byteLength(run.chunks[i]!) + 1;
      if (picked.length > 0 && bytes + size > PAGE_MAX_BYTES) {
        cutAtByteCap = true;
        break;
      }
      bytes += size;
      picked.push(i);
    }
    const lastSeq = picked.length === 0 ? undefined : run.firstSeq + picked.at(-1)!;
    const page: StoredPage = {
      bytes:
        picked.length === 0
          ? Buffer.alloc(0)
          : Buffer.from(picked.length === 1 ? run.chunks[picked[0]!]! : picked.map((i) => run.chunks[i]!).join(',')),
      count: picked.length,
      lastSeq,
      cutAtByteCap,
    };
    if (withFacts)
      page.facts = {
        types: picked.map((i) => run.types[i]!),
        seqs: picked.map((i) => run.firstSeq + i),
        occurredAtMs: picked.map((i) => run.occurredAtMs[i]!),
      };
    // Short of the limit and of the cap, the page ends at the run's end: whole only if nothing is committed past it.
    return picked.length < limit && !cutAtByteCap ? { page, wholeIfNothingAfter: run.firstSeq + run.chunks.length - 1 } : { page };
  }

  #expired(run: Run): number {
    const oldest = this.now() - MAX_AGE_MS;
    let n = 0;
    while (n < run.addedAt.length && run.addedAt[n]! < oldest) n++;
    return n;
  }

  #trimFront(run: Run, n: number): void {
    if (n <= 0) return;
    const gone = run.chunks.splice(0, n).reduce((sum, chunk) => sum + chunk.length, 0);
    run.mailboxIds.splice(0, n);
    run.types.splice(0, n);
    run.occurredAtMs.splice(0, n);
    run.addedAt.splice(0, n);
    run.firstSeq += n;
    run.chars -= gone;
    this.#chars -= gone;
  }

  /** Forgets what was kept of the workspace (its stored events were rewritten: an erasure). */
  forget(workspaceId: string): void {
    const run = this.#runs.get(workspaceId);
    if (run) this.#drop(workspaceId, run);
  }

  #drop(workspaceId: string, run: Run): void {
    this.#runs.delete(workspaceId);
    this.#chars -= run.chars;
  }
}

const EVENTS_PER_WORKSPACE = 256;
// ~1 MB of one-byte strings: at 500 events/s over 100 feeds, the last ~3.5 s of each (4 Mi: 3–5 MB
// more RSS while tailing, and no fewer reads: bench/README.md in git history, change 17).
const MAX_CHARS = 1024 * 1024;
const MAX_AGE_MS = 60_000;
