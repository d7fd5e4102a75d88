/**
 * The checker. The database's final content (`truth`) is first reconciled with what the writers
 * recorded, then every reader's acknowledged stream is compared with the truth, per workspace:
 *   - committed events all stored; rolled-back / failed ones never stored nor seen;
 *   - UNKNOWN transactions (connection or process died during COMMIT) present whole or absent whole;
 *   - real store: seq exactly 1..N per workspace, feed_counters.last_seq = N, each transaction's
 *     events consecutive and in append order;
 *   - full reader: exactly the workspace's events, each once, in key order (so no hole, no duplicate);
 *   - restricted reader: exactly the events of its mailboxes, each once, in order;
 *   - agreement: full readers give the same event at each position, and every cursor handed out
 *     names the same event for every reader (and the event the database has at that key).
 */
import type { FeedStore, ReaderResult, TruthRow, TxRecord } from './model.ts';

export interface CheckResult {
  txns: number;
  committedTxns: number;
  rollbacks: number;
  failed: number;
  unknown: number;
  unknownPresent: number;
  unknownAbsent: number;
  /** Events stored at the end. */
  events: number;
  /** Committed events missing from the database, plus events a reader should have got and did not. */
  lost: number;
  /** Deliveries owed: for each reader, the events it should have got (the denominator of `lost`). */
  owed: number;
  duplicated: number;
  reordered: number;
  /** Transactions stored in part. */
  partial: number;
  /** Events stored or delivered that must not exist for that reader (rolled back, failed, other mailbox, other workspace). */
  phantom: number;
  /** Real store only: seq values missing from 1..N, or feed_counters not at N. */
  holes: number;
  /** Readers disagreeing on the event at a position, or a cursor naming another event. */
  disagree: number;
  samples: string[];
}

const MAX_SAMPLES = 25;

export function check(
  store: FeedStore,
  workspaces: string[],
  txs: TxRecord[],
  readers: ReaderResult[],
  truth: TruthRow[],
  counters?: Map<string, number>,
): CheckResult {
  const r: CheckResult = {
    txns: txs.length,
    committedTxns: 0,
    rollbacks: 0,
    failed: 0,
    unknown: 0,
    unknownPresent: 0,
    unknownAbsent: 0,
    events: truth.length,
    lost: 0,
    owed: 0,
    duplicated: 0,
    reordered: 0,
    partial: 0,
    phantom: 0,
    holes: 0,
    disagree: 0,
    samples: [],
  };
  const note = (msg: string) => {
    if (r.samples.length < MAX_SAMPLES) r.samples.push(msg);
  };
  const tally = { r, note };
  const stored = storedInOrder(store, workspaces, truth, tally, counters);
  checkWriters(store, txs, truth, stored.truthById, tally);
  checkReaders(workspaces, readers, txs, stored, tally);

  return r;
}

/** Where the counts go, and the samples that say what was found. */
interface Tally {
  r: CheckResult;
  note: (msg: string) => void;
}

/** The database's events per workspace in key order (position = rank, 1-based), checked gap-free where the store promises it. */
interface Stored {
  byWs: Map<string, TruthRow[]>;
  truthById: Map<string, TruthRow>;
  posById: Map<string, number>;
}

function storedInOrder(
  store: FeedStore,
  workspaces: string[],
  truth: TruthRow[],
  { r, note }: Tally,
  counters?: Map<string, number>,
): Stored {
  const byWs = new Map<string, TruthRow[]>(workspaces.map((ws) => [ws, []]));
  const truthById = new Map<string, TruthRow>();
  for (const row of truth) {
    if (!byWs.has(row.ws)) {
      r.phantom++;
      note(`event ${row.id} stored in unknown workspace ${row.ws}`);
      continue;
    }
    byWs.get(row.ws)!.push(row);
    truthById.set(row.id, row);
  }
  const posById = new Map<string, number>();
  for (const [ws, rows] of byWs) {
    rows.sort((a, b) => a.key - b.key);
    rows.forEach((row, i) => posById.set(row.id, i + 1));
    if (store.gapFree) {
      const bad = rows.filter((row, i) => row.key !== i + 1);
      if (bad.length) {
        r.holes += bad.length;
        note(
          `${ws}: ${bad.length} seq values off 1..N (first: ${bad[0]!.id} has seq ${bad[0]!.key}, expected ${rows.indexOf(bad[0]!) + 1})`,
        );
      }
      const counter = counters?.get(ws);
      if (counters && counter !== rows.length) {
        r.holes++;
        note(`${ws}: feed_counters.last_seq = ${counter}, events stored = ${rows.length}`);
      }
    }
  }

  return { byWs, truthById, posById };
}

/** The writers' records against the database: committed all there, rolled back or failed absent, each transaction whole and consecutive. */
function checkWriters(store: FeedStore, txs: TxRecord[], truth: TruthRow[], truthById: Map<string, TruthRow>, { r, note }: Tally): void {
  const known = new Map<string, TxRecord>();
  for (const tx of txs) {
    for (const id of tx.ids) known.set(id, tx);
    const stored = tx.ids.map((id) => truthById.get(id));
    const present = stored.filter((row) => row !== undefined && row.ws === tx.ws).length;
    if (present > 0 && present < tx.ids.length) {
      r.partial++;
      note(`${tx.outcome} transaction of ${tx.writer} stored in part: ${present}/${tx.ids.length} (${tx.ids[0]}…)`);
    }
    switch (tx.outcome) {
      case 'committed':
        r.committedTxns++;
        if (present < tx.ids.length) {
          r.lost += tx.ids.length - present;
          note(
            `committed transaction of ${tx.writer} missing from the database: ${tx.ids.length - present}/${tx.ids.length} events (${tx.ids[0]}…)`,
          );
        }
        break;
      case 'rolledBack':
      case 'failed':
        if (tx.outcome === 'rolledBack') r.rollbacks++;
        else r.failed++;
        if (present > 0) {
          r.phantom += present;
          note(`${tx.outcome} transaction of ${tx.writer} found in the database (${tx.ids[0]}…)`);
        }
        break;
      case 'unknown':
        r.unknown++;
        if (present === tx.ids.length) r.unknownPresent++;
        else if (present === 0) r.unknownAbsent++;
        break;
    }
    if (store.gapFree && present === tx.ids.length) {
      const keys = stored.map((row) => row!.key);
      if (keys.some((k, i) => k !== keys[0]! + i)) {
        r.reordered++;
        note(`transaction of ${tx.writer} not stored as consecutive seq in append order: [${keys.join(',')}]`);
      }
    }
  }
  for (const row of truth) {
    if (!known.has(row.id)) {
      r.phantom++;
      note(`stored event ${row.id} was never written by a writer`);
    }
  }
}

/** The readers against the database: each event owed delivered once, in order, nothing else; readers and cursors agree. */
function checkReaders(
  workspaces: string[],
  readers: ReaderResult[],
  txs: TxRecord[],
  { byWs, truthById, posById }: Stored,
  { r, note }: Tally,
): void {
  const failedIds = new Set(txs.filter((tx) => tx.outcome === 'rolledBack' || tx.outcome === 'failed').flatMap((tx) => tx.ids));
  for (const ws of workspaces) {
    const rows = byWs.get(ws)!;
    const fullStreams: Array<[string, string[]]> = [];
    for (const reader of readers) {
      const allowed = reader.mailboxes === null ? null : new Set(reader.mailboxes);
      const expected = rows.filter((row) => allowed === null || (row.mailbox !== null && allowed.has(row.mailbox)));
      const expectedIds = new Set(expected.map((row) => row.id));
      r.owed += expected.length;
      const seen = reader.acked[ws] ?? [];
      if (allowed === null) fullStreams.push([reader.name, seen]);
      const once = new Set<string>();
      let maxPos = 0;
      for (const id of seen) {
        if (once.has(id)) {
          r.duplicated++;
          note(`${reader.name} ${ws}: ${id} (position ${posById.get(id)}) delivered again after being acknowledged`);
          continue;
        }
        once.add(id);
        if (!expectedIds.has(id)) {
          r.phantom++;
          const why = failedIds.has(id)
            ? 'a rolled-back/failed event'
            : truthById.has(id)
              ? 'not for this reader (workspace or mailbox)'
              : 'not in the database';
          note(`${reader.name} ${ws}: got ${id}: ${why}`);
          continue;
        }
        const pos = posById.get(id)!;
        if (pos < maxPos) {
          r.reordered++;
          note(`${reader.name} ${ws}: position ${pos} delivered after position ${maxPos}`);
        }
        maxPos = Math.max(maxPos, pos);
      }
      const missing = expected.filter((row) => !once.has(row.id));
      if (missing.length) {
        r.lost += missing.length;
        note(
          `${reader.name} ${ws}: ${missing.length} of ${expected.length} events never delivered (first: ${missing[0]!.id} at position ${posById.get(missing[0]!.id)}, key ${missing[0]!.key})`,
        );
      }
    }

    // Agreement, independent of the database: full readers position by position.
    const [first, ...others] = fullStreams;
    for (const [name, stream] of others) {
      const n = Math.max(stream.length, first![1].length);
      for (let i = 0; i < n; i++) {
        if (stream[i] !== first![1][i]) {
          r.disagree++;
          note(`${ws}: position ${i + 1}: ${first![0]} has ${first![1][i]}, ${name} has ${stream[i]}`);
          break;
        }
      }
    }
    // Every cursor names one event, the same for every reader, and the one the database has there.
    const atKey = new Map<number, string>();
    for (const reader of readers) {
      for (const [key, id] of reader.pageEnds[ws] ?? []) {
        const other = atKey.get(key);
        const row = truthById.get(id);
        if ((other !== undefined && other !== id) || (row && row.key !== key)) {
          r.disagree++;
          note(
            `${reader.name} ${ws}: cursor at key ${key} after ${id}, but ${other !== undefined && other !== id ? `another reader got ${other} there` : `the database has it at ${row!.key}`}`,
          );
        }
        atKey.set(key, id);
      }
    }
  }
}

export const violations = (c: CheckResult) => c.lost + c.duplicated + c.reordered + c.partial + c.phantom + c.holes + c.disagree;
