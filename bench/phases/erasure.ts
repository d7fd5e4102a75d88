import type { Phase } from './phase.ts';
/**
 * The erasure phase: the time to erase one address across N events of one workspace
 * (erase_person, then erasure_status until `completed`), and the latency of another workspace's
 * event_feed meanwhile (p50/p99, against the same reads before the erasure).
 *
 * The database is seeded straight through the library (`publish`, big transactions): N events in
 * the measured workspace, 1 in 1,000 of them carrying the erased address (as subject, sender or a
 * recipient), and OTHER_EVENTS in another workspace, whose reader replays its feed by pages of a
 * varying size (so each read goes to the database, not to the sealed pages) from one loop per
 * reader. The real server runs as a child process (`bin/event-feed.js serve`, as it ships).
 *
 * Alone:  tsx bench/phases/erasure.ts --events 1000000 [--database-url URL] [--readers 2]
 * Without --database-url, a fresh SQLite file in the system's temporary folder (deleted after).
 * A Postgres URL must name an empty database (it is migrated and seeded here).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { createKey } from '../../src/auth/api-keys.ts';
import { migrateLatest, openDatabase, publish } from '../../src/library.ts';
import { openStore } from '../../src/store/open-store.ts';
import { startServer } from '../processes.ts';
import { latency, sleep, type Latency } from '../stats.ts';

export interface ErasurePhaseOptions {
  /** Events of the measured workspace (1,000,000 by default). */
  events?: number;
  /** Where to run; a fresh SQLite file when absent. */
  databaseUrl?: string;
  /** Concurrent readers of the other workspace's feed (2 by default). */
  readers?: number;
  log?: (line: string) => void;
}

export interface ErasurePhaseResult {
  database: string;
  events: number;
  erasedEvents: number;
  seedSeconds: number;
  /** From erase_person's call to erasure_status saying `completed`. */
  eraseSeconds: number;
  eventsPerSecond: number;
  /** The other workspace's event_feed, before and during the erasure (ms). */
  otherFeedBefore: Latency;
  otherFeedDuring: Latency;
}

const ADDRESS = 'claire.dubois@exemple.fr';
const OTHER_EVENTS = 20_000;
const CHUNK = 5000;
const BASELINE_MS = 5000;

/** Event `i` of a workspace: a mail.received, 1 in 1,000 carrying ADDRESS (in turn as the person, the sender, a Cc). */
function eventAt(i: number) {
  const mine = i % 1000 === 500;
  const person =
    mine && i % 3000 === 500
      ? { email: ADDRESS, name: 'Claire Dubois' }
      : { email: `client${i % 7919}@exemple.fr`, name: `Client ${i % 7919}` };
  return {
    type: 'mail.received',
    subject: {
      person,
      refs: { mailbox_id: `mbx_b${String(i % 50).padStart(2, '0')}`, message_id: `msg_${i}`, thread_id: `thr_${i >> 2}` },
    },
    data: {
      internet_message_id: `<m${i}@mail.exemple.fr>`,
      from: mine && i % 3000 === 1500 ? { email: ADDRESS, name: 'Claire Dubois' } : { email: person.email, name: person.name },
      to: [{ email: 'contact@boutique-lumiere.fr', name: 'Boutique Lumière' }],
      ...(mine && i % 3000 === 2500 ? { cc: [{ email: ADDRESS }] } : {}),
      subject_line: `Question sur ma commande n° ${i}`,
      size_bytes: 4000 + (i % 10_000),
      attachment_count: i % 3,
      spam_score: (i % 50) / 10,
      spam_verdict: 'pass',
    },
  };
}

async function seed(databaseUrl: string, events: number, log: (line: string) => void) {
  const store = openStore(databaseUrl);
  const db = openDatabase(databaseUrl);
  try {
    await migrateLatest(db);
    const measured = (await store.createWorkspace('Erasure bench', true, Date.now())).id;
    const other = (await store.createWorkspace('Erasure bench: the other workspace', true, Date.now())).id;
    const admin = (await createKey(store, { workspaceId: measured, permissions: ['read', 'admin'], mailboxes: null }, Date.now())).key;
    const reader = (await createKey(store, { workspaceId: other, permissions: ['read'], mailboxes: null }, Date.now())).key;
    const started = performance.now();
    for (let done = 0; done < events; done += CHUNK) {
      const count = Math.min(CHUNK, events - done);
      await db.transaction((trx) =>
        publish(
          trx,
          measured,
          Array.from({ length: count }, (_, k) => eventAt(done + k)),
        ),
      );
      if (done % OTHER_EVENTS === 0 || done + count >= events) log(`seeded ${done + count} / ${events}`);
    }
    for (let done = 0; done < OTHER_EVENTS; done += CHUNK) {
      await db.transaction((trx) =>
        publish(
          trx,
          other,
          Array.from({ length: CHUNK }, (_, k) => eventAt(done + k)),
        ),
      );
    }
    return { measured, admin, reader, seedSeconds: (performance.now() - started) / 1000 };
  } finally {
    await db.destroy();
    await store.close();
  }
}

async function post(url: string, key: string, body: unknown): Promise<any> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${url}: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** One reader of the other workspace: replays its feed by pages of 50 to 150 events, again and again, timing each read. */
function readFeed(base: string, key: string, seed: number) {
  const samples: number[] = [];
  let recording = false;
  let stopped = false;
  const done = (async () => {
    let after: string | undefined;
    let n = seed;
    while (!stopped) {
      const limit = 50 + ((n = (n * 1103515245 + 12345) & 0x7fffffff) % 101);
      const started = performance.now();
      const page = await post(`${base}/v1/event_feed`, key, after ? { after, limit } : { limit });
      if (recording) samples.push(performance.now() - started);
      after = page.events.length === 0 ? undefined : page.next_cursor;
    }
  })();
  return {
    record: () => ((recording = true), (samples.length = 0)),
    take: () => samples.splice(0),
    stop: async () => ((stopped = true), await done),
  };
}

export async function erasurePhase(options: ErasurePhaseOptions = {}): Promise<ErasurePhaseResult> {
  const events = options.events ?? 1_000_000;
  const log = options.log ?? ((line: string) => console.error(`[erasure] ${line}`));
  const folder = options.databaseUrl ? undefined : mkdtempSync(join(tmpdir(), 'bench-erasure-'));
  const databaseUrl = options.databaseUrl ?? `sqlite://${join(folder!, 'bench.sqlite')}`;
  try {
    const seeded = await seed(databaseUrl, events, log);
    log(`seeded ${events} + ${OTHER_EVENTS} events in ${seeded.seedSeconds.toFixed(1)} s`);
    const server = await startServer(databaseUrl);
    try {
      const readers = Array.from({ length: options.readers ?? 2 }, (_, i) => readFeed(server.url, seeded.reader, i + 1));
      await sleep(1000);
      readers.forEach((r) => r.record());
      await sleep(BASELINE_MS);
      const before = readers.flatMap((r) => r.take());

      const started = performance.now();
      const { erasure } = await post(`${server.url}/v1/erase_person`, seeded.admin, { emails: [ADDRESS] });
      let status = erasure;
      while (status.status !== 'completed') {
        await sleep(50);
        status = (await post(`${server.url}/v1/erasure_status`, seeded.admin, { id: erasure.id })).erasure;
      }
      const eraseSeconds = (performance.now() - started) / 1000;
      const during = readers.flatMap((r) => r.take());
      await Promise.all(readers.map((r) => r.stop()));
      log(`erased ${status.events_erased} of ${events} events in ${eraseSeconds.toFixed(2)} s`);
      return {
        database: databaseUrl.split(':')[0]!,
        events,
        erasedEvents: status.events_erased,
        seedSeconds: Math.round(seeded.seedSeconds * 10) / 10,
        eraseSeconds: Math.round(eraseSeconds * 100) / 100,
        eventsPerSecond: Math.round(events / eraseSeconds),
        otherFeedBefore: latency(before),
        otherFeedDuring: latency(during),
      };
    } finally {
      await server.stop();
    }
  } finally {
    if (folder) rmSync(folder, { recursive: true, force: true });
  }
}

// Run alone: prints the result as JSON.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      events: { type: 'string', default: '1000000' },
      'database-url': { type: 'string' },
      readers: { type: 'string', default: '2' },
    },
  });
  const result = await erasurePhase({
    events: Number(values.events),
    databaseUrl: values['database-url'],
    readers: Number(values.readers),
  });
  console.log(JSON.stringify(result, null, 2));
}

/**
 * The phase in the bench's table: one address erased across a large workspace (1,000,000 events
 * on SQLite, 100,000 on Postgres; a fiftieth of that with --quick), and another workspace's
 * event_feed p99 meanwhile, on a database of its own (a fresh SQLite file; on Postgres the run's
 * database, last, once every other phase is done).
 */
export const erasureBenchPhase: Phase = {
  name: 'erasure',
  server: 'own',
  compares: false,
  async run(ctx) {
    const events = (ctx.kind === 'sqlite' ? 1_000_000 : 100_000) / (quick ? 50 : 1);
    benchLog(`[${ctx.kind}] erasure: one address across ${events} events, another workspace read meanwhile…`);
    ctx.result.erasure = await erasurePhase({
      events,
      ...(ctx.kind === 'postgres' ? { databaseUrl: ctx.database.url } : {}),
      log: benchLog,
    });
  },
};

/** The bench's flags are not this module's to parse (it also runs alone, with its own): only --quick is looked at. */
const quick = process.argv.includes('--quick');
const benchLog = (line: string) => console.error(line);
