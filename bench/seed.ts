/**
 * Seeds a benchmark database fast: realistic envelopes (demoTraffic's stories, spread over
 * 50 mailboxes) published with the library's `publish` in big transactions, straight into the
 * database before the server starts. The feed under test shares its tables with other workspaces
 * whose events are interleaved with it, as in production.
 */
import type { OpenedStore } from '../src/store/open-store.ts';
import type { EmitEventRequest } from '../generated/types.ts';
import { createKey } from '../src/auth/api-keys.ts';
import type { Clock } from '../src/base/clock.ts';
import { demoTraffic } from '../src/demo/traffic.ts';
import { publish } from '../src/library.ts';

export const MAILBOXES = Array.from({ length: 50 }, (_, i) => `mbx_b${String(i).padStart(2, '0')}`);
/** Two mailboxes that together hold 1 event in 1,000 of the feed (what the sparse key may see). */
export const SPARSE_MAILBOXES = [MAILBOXES[48]!, MAILBOXES[49]!];
const BUSY_MAILBOXES = MAILBOXES.slice(0, 48);

const CHUNK = 10_000; // events of the measured workspace per transaction
const OTHER_WORKSPACES = 4;
const OTHER_SHARE = 0.2; // the other workspaces together get 20% as many events as the measured one

export interface SeedOptions {
  events: number;
  /** Small workspaces (for ingestion and tailing), each with a write key and `readKeysPerWorkspace` read keys. */
  ingestWorkspaces: number;
  readKeysPerWorkspace: number;
  /** Events stored over this many days up to now, oldest first (the partitions phase); otherwise all stored now. */
  storedOverDays?: number;
  log?: (line: string) => void;
}

export interface Seeded {
  workspaceId: string;
  events: number;
  otherEvents: number;
  sparseEvents: number;
  lastSeq: number;
  keys: { read: string; sparse: string; write: string };
  /** Keys restricted to 1 (a sparse one: 1 event in 2,000), 10 and 50 (every) mailboxes, for the sparse phase. */
  scopes: Array<{ label: string; key: string; mailboxes: string[] }>;
  ingest: Array<{ workspaceId: string; writeKey: string; readKeys: string[] }>;
  seconds: number;
  eventsPerSecond: number;
  envelopeBytes: { mean: number };
}

// mulberry32, like the demo: the same database every run.
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Busy mailboxes get a skewed share (a few big shared inboxes, many personal ones).
const weights = BUSY_MAILBOXES.map((_, i) => 1 / (i + 1) ** 0.8);
const cumulative = weights.map(
  (
    (sum) => (w: number) =>
      (sum += w)
  )(0),
);
const totalWeight = cumulative.at(-1)!;

/**
 * `count` envelopes for chunk `k`: the demo's stories, with each story (one message id) moved to
 * one of 50 mailboxes, message ids made unique across chunks, and time moving forward per chunk.
 */
export function benchTraffic(count: number, k: number, baseMs: number): EmitEventRequest[] {
  const rnd = random(1000 + k);
  const events = demoTraffic(count, new Date(baseMs + k * 3_600_000));
  const mailboxOf = new Map<string, string>();
  let sparseToggle = k;
  const pick = () => {
    // 1 story in 1,000 goes to a sparse mailbox.
    if (rnd() < 0.001) return SPARSE_MAILBOXES[sparseToggle++ % 2]!;
    const x = rnd() * totalWeight;
    return BUSY_MAILBOXES[cumulative.findIndex((c) => c >= x)]!;
  };
  for (const event of events) {
    const refs = event.subject.refs as Record<string, string>;
    if (refs.message_id) {
      refs.message_id = `msg_${k.toString(36)}_${refs.message_id.slice(4)}`;
      let mailbox = mailboxOf.get(refs.message_id);
      if (!mailbox) mailboxOf.set(refs.message_id, (mailbox = pick()));
      refs.mailbox_id = mailbox;
      if (refs.thread_id) refs.thread_id = `thr_${k.toString(36)}_${refs.thread_id.slice(4)}`;
    } else {
      refs.mailbox_id = pick();
    }
  }
  return events;
}

export async function seed(store: OpenedStore, options: SeedOptions): Promise<Seeded> {
  const started = performance.now();
  const log = options.log ?? (() => {});
  const nowMs = Date.now();
  const spreadMs = (options.storedOverDays ?? 0) * 24 * 3_600_000;
  let storedAt = () => new Date();
  const clock: Clock = { now: () => storedAt() };
  const main = await store.createWorkspace('Bench — measured workspace', true, nowMs);
  const others: Array<{ id: string }> = [];
  for (let i = 0; i < OTHER_WORKSPACES; i++) others.push(await store.createWorkspace(`Bench — neighbour ${i}`, true, nowMs));
  // Events start 40 days of occurred_at ago (stored_at is now: retention leaves them alone).
  const baseMs = nowMs - 40 * 24 * 3_600_000;

  let done = 0;
  let otherEvents = 0;
  let sparseEvents = 0;
  let bytes = 0;
  let lastLog = performance.now();
  for (let k = 0; done < options.events; k++) {
    const n = Math.min(CHUNK, options.events - done);
    const batch = benchTraffic(n, k, baseMs);
    const otherN = Math.max(1, Math.round((n * OTHER_SHARE) / OTHER_WORKSPACES));
    const otherBatches = others.map((_, i) => benchTraffic(otherN, 1_000_000 + k * OTHER_WORKSPACES + i, baseMs));
    for (const e of batch) if (SPARSE_MAILBOXES.includes(e.subject.refs.mailbox_id ?? '')) sparseEvents++;
    if (spreadMs > 0) {
      const at = nowMs - spreadMs + Math.floor((spreadMs * done) / options.events);
      storedAt = () => new Date(at);
    }
    await store.knex.transaction(async (trx) => {
      // Interleave: neighbours' rows land between the measured workspace's rows.
      const half = Math.ceil(batch.length / 2);
      const published = await publish(trx, main.id, batch.slice(0, half), clock);
      for (let i = 0; i < others.length; i++) await publish(trx, others[i]!.id, otherBatches[i]!, clock);
      published.push(...(await publish(trx, main.id, batch.slice(half), clock)));
      for (const p of published) bytes += Buffer.byteLength(p.envelope);
    });
    done += n;
    otherEvents += otherN * others.length;
    if (performance.now() - lastLog > 10_000) {
      lastLog = performance.now();
      log(
        `  seeded ${done.toLocaleString('en')} / ${options.events.toLocaleString('en')} (${Math.round(done / ((lastLog - started) / 1000)).toLocaleString('en')} events/s)`,
      );
    }
  }

  const read = await createKey(store, { workspaceId: main.id, permissions: ['read'], mailboxes: null, label: 'bench read' }, nowMs);
  const sparse = await createKey(
    store,
    { workspaceId: main.id, permissions: ['read'], mailboxes: SPARSE_MAILBOXES, label: 'bench sparse' },
    nowMs,
  );
  const write = await createKey(
    store,
    { workspaceId: main.id, permissions: ['read', 'write'], mailboxes: null, label: 'bench write' },
    nowMs,
  );
  const scopes: Seeded['scopes'] = [];
  for (const [label, mailboxes] of [
    ['1 mailbox', [SPARSE_MAILBOXES[0]!]],
    ['10 mailboxes', MAILBOXES.slice(0, 10)],
    ['50 mailboxes', MAILBOXES],
  ] as const) {
    scopes.push({
      label,
      mailboxes: [...mailboxes],
      key: (
        await createKey(store, { workspaceId: main.id, permissions: ['read'], mailboxes: [...mailboxes], label: `bench ${label}` }, nowMs)
      ).key,
    });
  }
  const ingest: Seeded['ingest'] = [];
  for (let i = 0; i < options.ingestWorkspaces; i++) {
    const ws = await store.createWorkspace(`Bench — small ${i}`, true, nowMs);
    const writeKey = (await createKey(store, { workspaceId: ws.id, permissions: ['write'], mailboxes: null }, nowMs)).key;
    const readKeys = [];
    for (let j = 0; j < options.readKeysPerWorkspace; j++) {
      readKeys.push((await createKey(store, { workspaceId: ws.id, permissions: ['read'], mailboxes: null }, nowMs)).key);
    }
    ingest.push({ workspaceId: ws.id, writeKey, readKeys });
  }
  const counter = await store.knex('feed_counters').select('last_seq').where({ workspace_id: main.id }).first();
  const seconds = (performance.now() - started) / 1000;
  return {
    workspaceId: main.id,
    events: options.events,
    otherEvents,
    sparseEvents,
    lastSeq: Number(counter.last_seq),
    keys: { read: read.key, sparse: sparse.key, write: write.key },
    scopes,
    ingest,
    seconds,
    eventsPerSecond: (options.events + otherEvents) / seconds,
    envelopeBytes: { mean: bytes / options.events },
  };
}
