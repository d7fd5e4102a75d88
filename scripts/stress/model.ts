/**
 * Shared vocabulary of the stress harness: what writers record, what readers hand back, what a store
 * must offer so the real feed (src/) and the naive negative control run through the very same code.
 */
import type { Knex } from 'knex';
import type { EmitEventRequest } from '../../generated/types.ts';
import type { Principal } from '../../src/auth/principal.ts';
import { newEventId } from '../../src/base/ids.ts';
import { sampleEvent } from '../../test/support/contract.ts';

export type Outcome =
  /** COMMIT returned. */
  | 'committed'
  /** Deliberately rolled back after appending (COMMIT never sent). */
  | 'rolledBack'
  /** An error (kill, timeout, busy) before COMMIT was sent. */
  | 'failed'
  /** The connection (or process) died while COMMIT was in flight: resolved against the database afterwards. */
  | 'unknown';

export interface TxRecord {
  writer: string;
  ws: string;
  /** Client-chosen event ids, in append order. */
  ids: string[];
  outcome: Outcome;
  /** Failed: the error code or message. */
  reason?: string;
}

/** One event as a reader got it. */
export interface SeenEvent {
  id: string;
  ws: string;
  mailbox: string | null;
}

export interface Page {
  events: SeenEvent[];
  nextCursor: string;
}

export interface ReaderSpec {
  name: string;
  /** null: full reader (every mailbox). */
  mailboxes: string[] | null;
}

/** What one reader ends with, per workspace. */
export interface ReaderResult {
  name: string;
  mailboxes: string[] | null;
  /** Acknowledged event ids, in delivery order, per workspace. */
  acked: Record<string, string[]>;
  /** (cursor position decoded from next_cursor, id of the page's last event) for every non-empty page. */
  pageEnds: Record<string, Array<[number, string]>>;
  pages: number;
  restarts: number;
  /** Events received and then dropped by a simulated crash (re-read after the restart). */
  redelivered: number;
  errors: number;
}

/** The database's own account of one stored event, read behind the readers' backs at the end. */
export interface TruthRow {
  ws: string;
  id: string;
  /** What a cursor stands for: seq (real store) or the bigserial id (naive store). */
  key: number;
  mailbox: string | null;
}

/** The two implementations under test, behind one interface. */
export interface FeedStore {
  name: string;
  /** Whether keys must be exactly 1..N per workspace (no holes) and each transaction's keys consecutive. */
  gapFree: boolean;
  /** Creates extra tables, if any (after migrateLatest). */
  setup(db: Knex): Promise<void>;
  /** Appends inside the writer's transaction. */
  append(trx: Knex.Transaction, ws: string, events: EmitEventRequest[]): Promise<void>;
  /** One page for this principal after a cursor (undefined: from the start). */
  read(db: Knex, principal: Principal, after: string | undefined, limit: number): Promise<Page>;
  /** The key a cursor stands for. */
  cursorKey(ws: string, cursor: string): number;
  truth(db: Knex): Promise<TruthRow[]>;
  /** Last handed-out key per workspace, when the store keeps one (feed_counters). */
  counters?(db: Knex): Promise<Map<string, number>>;
  /** Releases what reads opened (the heads' channels), once a run is over. */
  teardown?(): Promise<void>;
}

export const MAILBOXES = Array.from({ length: 10 }, (_, i) => `mbx_${i}`);
/** Extra mailbox ids that never get events: pushes one restricted reader over readPage's per-mailbox merge limit (32). */
export const GHOST_MAILBOXES = Array.from({ length: 30 }, (_, i) => `mbx_ghost_${i}`);

export const rand = (n: number) => Math.floor(Math.random() * n);
export const between = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
export const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)]!;
export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

let counter = 0;
/** A valid emit request with a client-chosen id; ~5% carry no mailbox (only full readers may see those). */
export function newEvent(): EmitEventRequest {
  const mailbox = Math.random() < 0.05 ? undefined : pick(MAILBOXES);
  return { ...(sampleEvent(mailbox, counter++) as EmitEventRequest), id: newEventId() };
}

/** Readers: `full` with every mailbox, `restricted` with a random subset (the first one also lists 30 ghost mailboxes). */
export function readerSpecs(full: number, restricted: number, prefix = ''): ReaderSpec[] {
  const specs: ReaderSpec[] = [];
  for (let i = 0; i < full; i++) specs.push({ name: `${prefix}full${i}`, mailboxes: null });
  for (let i = 0; i < restricted; i++) {
    const subset = MAILBOXES.filter(() => Math.random() < 0.3);
    if (subset.length === 0) subset.push(pick(MAILBOXES));
    specs.push({ name: `${prefix}restricted${i}`, mailboxes: i === 0 ? [...subset, ...GHOST_MAILBOXES] : subset });
  }
  return specs;
}

export function readPrincipal(ws: string, mailboxes: string[] | null): Principal {
  return { keyId: 'key_stress', workspaceId: ws, permissions: new Set(['read']), mailboxes };
}

/** Parses an envelope as the feed serves it. */
export function seenFromEnvelope(envelope: string | object): SeenEvent {
  const e = (typeof envelope === 'string' ? JSON.parse(envelope) : envelope) as {
    id: string;
    account: string;
    subject: { refs: { mailbox_id?: string } };
  };
  return { id: e.id, ws: e.account, mailbox: e.subject.refs.mailbox_id ?? null };
}
