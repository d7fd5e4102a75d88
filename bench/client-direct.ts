/**
 * In-process readers, each in its own process like the HTTP load generator:
 *   ceiling  the same pages as the replay, read straight from the database with the service's own
 *            query (Store.readPage), no HTTP: the limit the replay can approach
 *   dbprobe  the time of readPage alone for pages at given positions (where depth costs show first)
 *   redis    the peer: the same envelopes from a Redis Stream, XRANGE … COUNT 500 through ioredis,
 *            parsing every envelope, following the last entry id
 */
import { Redis } from 'ioredis';
import { feedPageJson } from '../src/feed/page.ts';
import { clientMain, latency, round } from './stats.ts';
import { openStore } from '../src/store/open-store.ts';
import type { Store } from '../src/store/port.ts';

const now = () => performance.now();

async function ceiling(c: {
  databaseUrl: string;
  workspaceId: string;
  limit: number;
  warmupPages: number;
  expectEvents: number;
  runs: number;
}) {
  const db = openStore(c.databaseUrl);
  const q = { workspaceId: c.workspaceId, limit: c.limit, mailboxes: null };
  let after = 0;
  for (let i = 0; i < c.warmupPages; i++) after = (await db.readPage({ ...q, afterSeq: after })).lastSeq ?? after;
  const runs = [];
  for (let r = 0; r < c.runs; r++) {
    let events = 0;
    let bytes = 0;
    after = 0;
    let pages = 0;
    const started = now();
    const cpu0 = process.cpuUsage();
    for (;;) {
      pages++;
      const page = await db.readPage({ ...q, afterSeq: after });
      if (page.count === 0) break;
      bytes += page.bytes.length;
      events += page.count;
      after = page.lastSeq!;
    }
    const seconds = (now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (events !== c.expectEvents) throw new Error(`ceiling read ${events} events, expected ${c.expectEvents}`);
    runs.push({
      events,
      seconds: round(seconds),
      eventsPerSecond: Math.round(events / seconds),
      mbPerSecond: round(bytes / 1e6 / seconds, 1),
      cpuMsPerPage: round((cpu.user + cpu.system) / 1000 / pages),
    });
  }
  // What any client must spend on a page besides reading it: JSON.parse of the page as the server
  // sends it (same splicing), on pages spread over the feed. Not part of the ceiling; it bounds how
  // close a client that parses its pages can come to it.
  const texts: string[] = [];
  for (let i = 0; i < 40; i++) {
    const page = await db.readPage({ ...q, afterSeq: Math.floor((i / 40) * Math.max(0, c.expectEvents - c.limit)) });
    texts.push(
      Buffer.concat(
        feedPageJson({ events: page, next_cursor: 'AQAAAAAAAAACMDFNN1oyODM2NUFLUzdXNktIU0RNV1RWUlqdZWj85T5IUO3Zdfej4Zb_' }),
      ).toString('utf8'),
    );
  }
  for (const t of texts) JSON.parse(t);
  const t0 = now();
  for (let r = 0; r < 5; r++) for (const t of texts) JSON.parse(t);
  const parseMsPerPage = round((now() - t0) / (5 * texts.length));
  await db.close();
  return { runs, parseMsPerPage };
}

async function dbprobe(c: {
  databaseUrl: string;
  workspaceId: string;
  probes: Array<{ label: string; afterSeq: number; mailboxes: string[] | null; limit: number }>;
  rounds: number;
  warmupRounds: number;
}) {
  const db = openStore(c.databaseUrl);
  const samples = new Map<string, number[]>();
  for (let r = 0; r < c.warmupRounds + c.rounds; r++) {
    for (const p of c.probes) {
      const t0 = now();
      await db.readPage({ workspaceId: c.workspaceId, afterSeq: p.afterSeq, limit: p.limit, mailboxes: p.mailboxes });
      if (r >= c.warmupRounds) (samples.get(p.label) ?? samples.set(p.label, []).get(p.label)!).push(now() - t0);
    }
  }
  await db.close();
  return Object.fromEntries([...samples].map(([label, ms]) => [label, latency(ms)]));
}

async function redis(c: { redisUrl: string; key: string; count: number; warmupPages: number; expectEvents: number; runs: number }) {
  const client = new Redis(c.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  type Entry = [string, string[]];
  const page = async (after: string) => {
    const entries = (await client.xrange(c.key, after === '' ? '-' : `(${after}`, '+', 'COUNT', c.count)) as Entry[];
    // Like the HTTP client: every envelope is parsed.
    const events = entries.map(([, fields]) => JSON.parse(fields[1]!) as { id: string });
    let bytes = 0;
    for (const [, fields] of entries) bytes += fields[1]!.length;
    return { entries, events, bytes };
  };
  let after = '';
  for (let i = 0; i < c.warmupPages; i++) after = (await page(after)).entries.at(-1)?.[0] ?? after;
  const runs = [];
  for (let r = 0; r < c.runs; r++) {
    let events = 0;
    let bytes = 0;
    after = '';
    let pages = 0;
    const started = now();
    const cpu0 = process.cpuUsage();
    for (;;) {
      pages++;
      const p = await page(after);
      if (p.entries.length === 0) break;
      events += p.events.length;
      bytes += p.bytes;
      after = p.entries.at(-1)![0];
    }
    const seconds = (now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    if (events !== c.expectEvents) throw new Error(`redis read ${events} events, expected ${c.expectEvents}`);
    runs.push({
      events,
      seconds: round(seconds),
      eventsPerSecond: Math.round(events / seconds),
      mbPerSecond: round(bytes / 1e6 / seconds, 1),
      clientCpuMsPerPage: round((cpu.user + cpu.system) / 1000 / pages),
    });
  }
  client.disconnect();
  return runs;
}

await clientMain({ ceiling, dbprobe, redis });
