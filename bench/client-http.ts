/**
 * The HTTP load generator: runs in its own process (undici, keep-alive), one mode per run.
 *   replay  one client reads the whole feed by cursor, limit 500, parsing every page
 *   probe   sequential single requests (HTTP or MCP) round-robin over labelled probes: latency per label
 *   tail    N clients polling at the head, each with its own key
 *   writer  emit_event at a fixed rate (open loop)
 *   ingest  emit_event from C concurrent closed-loop clients over one or many workspaces
 *   fanout  R readers at once, each on its own connection, replaying by cursor from its own start for a while
 */
import { Client, Pool } from 'undici';
import { benchTraffic } from './seed.ts';
import { jsonHeaders, openLoopEmits } from './open-loop-emits.ts';
import { clientMain, drainSaid, latency, round, sleep } from './stats.ts';

const now = () => performance.now();

async function replay(c: { url: string; key: string; limit: number; warmupPages: number; expectEvents: number }) {
  const client = new Client(c.url, { pipelining: 1, keepAliveTimeout: 60_000 });
  const page = async (after: string | undefined) => {
    const { statusCode, body } = await client.request({
      method: 'POST',
      path: '/v1/event_feed',
      headers: jsonHeaders(c.key),
      body: JSON.stringify(after === undefined ? { limit: c.limit } : { after, limit: c.limit }),
    });
    const text = await body.text();
    if (statusCode !== 200) throw new Error(`event_feed answered ${statusCode}: ${text.slice(0, 200)}`);
    // What a real client does: parse the page, use its events, follow next_cursor.
    const parsed = JSON.parse(text) as { events: Array<{ id: string }>; next_cursor: string };
    return { parsed, bytes: Buffer.byteLength(text) };
  };
  // Warm-up (JIT, connection): a few pages from the start, not counted.
  let after: string | undefined;
  for (let i = 0; i < c.warmupPages; i++) after = (await page(after)).parsed.next_cursor;

  let events = 0;
  let bytes = 0;
  let pages = 0;
  let lastId = '';
  const pageMs: number[] = [];
  after = undefined;
  const started = now();
  const cpu0 = process.cpuUsage();
  for (;;) {
    const t0 = now();
    const { parsed, bytes: b } = await page(after);
    pageMs.push(now() - t0);
    pages++;
    bytes += b;
    if (parsed.events.length === 0) break;
    events += parsed.events.length;
    lastId = parsed.events.at(-1)!.id;
    after = parsed.next_cursor;
  }
  const seconds = (now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await client.close();
  if (events !== c.expectEvents) throw new Error(`replay read ${events} events, expected ${c.expectEvents}`);
  return {
    events,
    pages,
    bytes,
    seconds: round(seconds),
    eventsPerSecond: Math.round(events / seconds),
    mbPerSecond: round(bytes / 1e6 / seconds, 1),
    pageMs: latency(pageMs),
    clientCpuMsPerPage: round((cpu.user + cpu.system) / 1000 / pages),
    lastId,
  };
}

/**
 * Fan-out replay: R readers at once, each with a connection of its own (so `serve --workers` hands
 * them to different workers), each replaying the feed by cursor from its own starting cursor
 * (spread over the feed, so they do not read the same pages), back to the start when it reaches
 * the end, for `seconds` after `warmupSeconds`. Events and pages per second for all of them.
 */
async function fanout(c: { url: string; key: string; starts: string[]; seconds: number; warmupSeconds: number; limit: number }) {
  let events = 0;
  let pages = 0;
  const pageMs: number[] = [];
  const countFrom = now() + c.warmupSeconds * 1000;
  const end = countFrom + c.seconds * 1000;
  const cpu0 = process.cpuUsage();
  await Promise.all(
    c.starts.map(async (start) => {
      const client = new Client(c.url, { pipelining: 1, keepAliveTimeout: 60_000 });
      let after: string | undefined = start;
      while (now() < end) {
        const t0 = now();
        const { statusCode, body } = await client.request({
          method: 'POST',
          path: '/v1/event_feed',
          headers: jsonHeaders(c.key),
          body: JSON.stringify(after === undefined ? { limit: c.limit } : { after, limit: c.limit }),
        });
        const text = await body.text();
        if (statusCode !== 200) throw new Error(`event_feed answered ${statusCode}: ${text.slice(0, 200)}`);
        const page = JSON.parse(text) as { events: Array<{ id: string }>; next_cursor: string };
        if (t0 >= countFrom && now() <= end) {
          pages++;
          events += page.events.length;
          pageMs.push(now() - t0);
        }
        after = page.events.length === 0 ? undefined : page.next_cursor;
      }
      await client.close();
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return {
    readers: c.starts.length,
    events,
    pages,
    seconds: c.seconds,
    eventsPerSecond: Math.round(events / c.seconds),
    pageMs: latency(pageMs),
    clientCpuMsPerPage: round((cpu.user + cpu.system) / 1000 / Math.max(1, pages)),
  };
}

interface Probe {
  label: string;
  via: 'http' | 'mcp';
  key: string;
  args: Record<string, unknown>;
}

async function probe(c: { url: string; probes: Probe[]; rounds: number; warmupRounds: number }) {
  const client = new Client(c.url, { pipelining: 1, keepAliveTimeout: 60_000 });
  const samples = new Map<string, number[]>();
  const sizes = new Map<string, number[]>();
  let rpc = 0;
  const one = async (p: Probe) => {
    const t0 = now();
    let events: unknown[];
    if (p.via === 'http') {
      const { statusCode, body } = await client.request({
        method: 'POST',
        path: '/v1/event_feed',
        headers: jsonHeaders(p.key),
        body: JSON.stringify(p.args),
      });
      const text = await body.text();
      if (statusCode !== 200) throw new Error(`${p.label}: HTTP ${statusCode} ${text.slice(0, 200)}`);
      events = (JSON.parse(text) as { events: unknown[] }).events;
    } else {
      const { statusCode, body } = await client.request({
        method: 'POST',
        path: '/mcp',
        headers: { ...jsonHeaders(p.key), accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++rpc, method: 'tools/call', params: { name: 'event_feed', arguments: p.args } }),
      });
      const text = await body.text();
      const parsed = JSON.parse(text) as { result?: { isError?: boolean; structuredContent?: { events: unknown[] } } };
      if (statusCode !== 200 || !parsed.result || parsed.result.isError)
        throw new Error(`${p.label}: MCP ${statusCode} ${text.slice(0, 200)}`);
      events = parsed.result.structuredContent!.events;
    }
    return { ms: now() - t0, events: events.length };
  };
  for (let r = 0; r < c.warmupRounds; r++) for (const p of c.probes) await one(p);
  for (let r = 0; r < c.rounds; r++) {
    for (const p of c.probes) {
      const { ms, events } = await one(p);
      (samples.get(p.label) ?? samples.set(p.label, []).get(p.label)!).push(ms);
      (sizes.get(p.label) ?? sizes.set(p.label, []).get(p.label)!).push(events);
    }
  }
  await client.close();
  return Object.fromEntries(
    [...samples].map(([label, ms]) => {
      const ev = sizes.get(label)!;
      return [label, { ...latency(ms), eventsPerPage: round(ev.reduce((a, b) => a + b, 0) / ev.length, 1) }];
    }),
  );
}

async function tail(c: {
  url: string;
  clients: Array<{ key: string; cursor: string }>;
  pollMs: number;
  seconds: number;
  warmupSeconds: number;
  limit: number;
  drainSeconds: number;
  drainOnStdin?: boolean;
}) {
  // With drainOnStdin, clients finish only once the writer (another process) has stopped: every
  // emit is answered then, so a client's first empty poll after it means it has every event.
  const writerStopped = c.drainOnStdin ? drainSaid() : undefined;
  const pool = new Pool(c.url, { connections: c.clients.length, pipelining: 1, keepAliveTimeout: 60_000 });
  const ms: number[] = [];
  let errors = 0;
  let requests = 0;
  let empty = 0;
  const received = new Array<number>(c.clients.length).fill(0);
  const errorSamples: string[] = [];
  let measuring = false;
  let draining = false;
  let abort = false;
  const started = now();
  const client = async (i: number) => {
    let cursor = c.clients[i]!.cursor;
    await sleep(Math.random() * c.pollMs); // spread the clients over a poll interval
    let failures = 0;
    while (!abort) {
      const t0 = now();
      let full = false;
      try {
        const { statusCode, body } = await pool.request({
          method: 'POST',
          path: '/v1/event_feed',
          headers: jsonHeaders(c.clients[i]!.key),
          body: JSON.stringify({ after: cursor, limit: c.limit }),
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        const text = await body.text();
        if (statusCode !== 200) throw new Error(`HTTP ${statusCode} ${text.slice(0, 120)}`);
        const page = JSON.parse(text) as { events: unknown[]; next_cursor: string };
        received[i]! += page.events.length;
        cursor = page.next_cursor;
        full = page.events.length === c.limit;
        if (measuring) {
          ms.push(now() - t0);
          requests++;
          if (page.events.length === 0) empty++;
        }
        // Once the writer has stopped, a client is done when it is caught up.
        if (draining && page.events.length === 0) return;
      } catch (err) {
        if (measuring) errors++;
        if (errorSamples.length < 5) errorSamples.push(String((err as Error).message).slice(0, 160));
        if (draining && ++failures > 20) return;
      }
      if (!full) await sleep(c.pollMs);
    }
  };
  const all = c.clients.map((_, i) => client(i));
  await sleep(c.warmupSeconds * 1000); // not counted
  measuring = true;
  const measureStart = now();
  await sleep(c.seconds * 1000);
  measuring = false;
  const seconds = (now() - measureStart) / 1000;
  // The writer stops with the measurement: let every client catch up, to count what it received.
  await sleep(c.drainSeconds * 1000);
  if (writerStopped) await writerStopped;
  draining = true;
  await Promise.race([Promise.all(all), sleep(60_000)]);
  abort = true;
  await pool.destroy();
  return {
    clients: c.clients.length,
    pollMs: c.pollMs,
    seconds: round(seconds),
    requests,
    requestsPerSecond: Math.round(requests / seconds),
    emptyShare: round(empty / Math.max(1, requests)),
    errors,
    errorSamples,
    latency: latency(ms),
    received,
    totalSeconds: round((now() - started) / 1000),
  };
}

/** emit_event at `rate` per second in all, round-robin over `keys` (openLoopEmits), counted per key. */
async function writer(c: { url: string; keys: string[]; rate: number; seconds: number; seedChunk: number }) {
  const ms: number[] = [];
  const okPerKey = new Array<number>(c.keys.length).fill(0);
  let ok = 0;
  let errors = 0;
  const { sent, skipped, seconds } = await openLoopEmits(c, (answer) => {
    if (answer.statusCode === 0) return void errors++;
    if (answer.statusCode === 201) {
      ok++;
      okPerKey[answer.keyIndex]!++;
    } else errors++;
    ms.push(answer.answeredAt - answer.sentAt);
  });
  return {
    rate: c.rate,
    sent,
    ok,
    errors,
    skipped,
    seconds: round(seconds),
    eventsPerSecond: Math.round(ok / seconds),
    latency: latency(ms),
    okPerKey,
  };
}

async function ingest(c: { url: string; keys: string[]; concurrency: number; seconds: number; warmupSeconds: number; seedChunk: number }) {
  const pool = new Pool(c.url, { connections: c.concurrency, pipelining: 1, keepAliveTimeout: 60_000 });
  const bodies = benchTraffic(4000, c.seedChunk, Date.now() - 3_600_000).map((e) => JSON.stringify({ ...e, occurred_at: undefined }));
  const ms: number[] = [];
  let ok = 0;
  let errors = 0;
  const errorSamples: string[] = [];
  let next = 0;
  let measuring = false;
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const i = next++;
      const t0 = now();
      try {
        const { statusCode, body } = await pool.request({
          method: 'POST',
          path: '/v1/emit_event',
          headers: jsonHeaders(c.keys[i % c.keys.length]!),
          body: bodies[i % bodies.length]!,
          headersTimeout: 15_000,
          bodyTimeout: 15_000,
        });
        const text = await body.text();
        if (statusCode !== 201) throw new Error(`HTTP ${statusCode} ${text.slice(0, 160)}`);
        if (measuring) {
          ok++;
          ms.push(now() - t0);
        }
      } catch (err) {
        if (measuring) errors++;
        if (errorSamples.length < 5) errorSamples.push(String((err as Error).message).slice(0, 200));
      }
    }
  };
  const workers = Array.from({ length: c.concurrency }, worker);
  await sleep(c.warmupSeconds * 1000);
  measuring = true;
  const t0 = now();
  await sleep(c.seconds * 1000);
  measuring = false;
  const seconds = (now() - t0) / 1000;
  stop = true;
  await Promise.all(workers);
  await pool.close();
  return {
    workspaces: c.keys.length,
    concurrency: c.concurrency,
    seconds: round(seconds),
    events: ok,
    eventsPerSecond: Math.round(ok / seconds),
    errors,
    errorSamples,
    latency: latency(ms),
  };
}

await clientMain({ replay, probe, tail, writer, ingest, fanout });
