/**
 * The long-poll load (phase 13), in processes of its own; one mode per run.
 *   polls    N held polls, each on its own connection: POST /v1/event_feed {after, limit} with
 *            `Prefer: wait=W`, then again at once from next_cursor. Records, per poll, each event id
 *            it got and when its answer arrived, and when each empty answer (a wait that ran out)
 *            arrived. Prints `ready` once every poll's first request is on its connection; stops
 *            when `drain` arrives on stdin (the writer has stopped), after `settleMs`.
 *   emitter  emit_event at a fixed rate (open loop), round-robin over the workspaces' write keys:
 *            records each emit's event id and when its answer arrived.
 * Times are performance.timeOrigin + performance.now() (ms): one clock for every process on the
 * machine, so a poll's answer time minus the emit's answer time is the wake-up latency.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Pool } from 'undici';
import { jsonHeaders, openLoopEmits } from './open-loop-emits.ts';
import { clientMain, drainSaid, latency, round, sleep } from './stats.ts';

const at = () => performance.timeOrigin + performance.now();
const r3 = (t: number) => Math.round(t * 1000) / 1000;

export interface PollRecord {
  /** [event id, answer arrival time] for every event this poll was given, in order. */
  events: Array<[string, number]>;
  /** Arrival times of answers with no event (the wait ran out). */
  empties: number[];
  requests: number;
  errors: number;
}

async function polls(c: {
  url: string;
  polls: number;
  workspaces: Array<{ key: string; cursor: string }>;
  waitSeconds: number;
  limit: number;
  settleMs: number;
}) {
  // Poll i tails workspace i % W, with its key, from its cursor (one per workspace: the config stays within argv's bounds).
  const of = (i: number) => c.workspaces[i % c.workspaces.length]!;
  const drained = drainSaid();
  const timeoutMs = (c.waitSeconds + 15) * 1000;
  // One connection per poll: each held request has its own, as a real consumer's would.
  const pool = new Pool(c.url, {
    connections: c.polls,
    pipelining: 1,
    keepAliveTimeout: 120_000,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connectTimeout: 30_000,
  });
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  const records: PollRecord[] = Array.from({ length: c.polls }, () => ({ events: [], empties: [], requests: 0, errors: 0 }));
  const errorSamples: string[] = [];
  let notApplied = 0;
  let stopping = false;
  const stop = new AbortController();
  const poll = async (i: number) => {
    let cursor = of(i).cursor;
    const record = records[i]!;
    while (!stopping) {
      try {
        const { statusCode, headers, body } = await pool.request({
          method: 'POST',
          path: '/v1/event_feed',
          headers: { ...jsonHeaders(of(i).key), prefer: `wait=${c.waitSeconds}` },
          body: JSON.stringify({ after: cursor, limit: c.limit }),
          signal: stop.signal,
        });
        const text = await body.text();
        const t = at();
        record.requests++;
        if (statusCode !== 200) {
          record.errors++;
          if (errorSamples.length < 5) errorSamples.push(`HTTP ${statusCode} ${text.slice(0, 160)}`);
          await sleep(statusCode === 429 ? 1000 : 100);
          continue;
        }
        if (headers['preference-applied'] !== `wait=${c.waitSeconds}`) notApplied++;
        const page = JSON.parse(text) as { events: Array<{ id: string }>; next_cursor: string };
        if (page.events.length === 0) record.empties.push(r3(t));
        for (const e of page.events) record.events.push([e.id, r3(t)]);
        cursor = page.next_cursor;
      } catch (err) {
        if (stopping) return;
        record.errors++;
        if (errorSamples.length < 5) errorSamples.push(String((err as Error).message).slice(0, 160));
        await sleep(100);
      }
    }
  };
  const started = at();
  const all = Array.from({ length: c.polls }, (_, i) => poll(i));
  // Ready once every poll's request is on a connection of its own (then a moment for the server to hold them all).
  for (const deadline = Date.now() + 30_000; ;) {
    const s = pool.stats;
    if (s.connected >= c.polls && s.running >= c.polls && s.pending === 0) break;
    if (Date.now() > deadline) throw new Error(`polls: only ${s.connected} connected, ${s.running} running after 30 s`);
    await sleep(20);
  }
  await sleep(300);
  const readySeconds = (at() - started) / 1000;
  process.stdout.write('ready\n');
  loopDelay.enable();
  const cpu0 = process.cpuUsage();
  const t0 = at();
  await drained;
  await sleep(c.settleMs); // a wake answered after the writer's last emit arrives within this
  const cpu = process.cpuUsage(cpu0);
  const seconds = (at() - t0) / 1000;
  loopDelay.disable();
  stopping = true;
  stop.abort();
  await pool.destroy().catch(() => {});
  await Promise.all(all);
  const ms = (ns: number) => round(ns / 1e6, 2);
  return {
    polls: c.polls,
    readySeconds: round(readySeconds, 2),
    notApplied,
    errorSamples,
    clientCpuShare: round((cpu.user + cpu.system) / 1e6 / seconds, 3),
    clientLoopDelayMs: { p50: ms(loopDelay.percentile(50)), p99: ms(loopDelay.percentile(99)), max: ms(loopDelay.max) },
    records,
  };
}

/** emit_event at `rate` per second, round-robin over `keys` (openLoopEmits), each event's id and answer time kept. */
async function emitter(c: { url: string; keys: string[]; rate: number; seconds: number; seedChunk: number }) {
  const emits: Array<[number, string, number, number]> = []; // [workspace index, event id, sent at, answered at]
  const ms: number[] = [];
  const errorSamples: string[] = [];
  let errors = 0;
  const startedAt = at();
  // The answers' times on one clock across processes (performance.timeOrigin + performance.now()).
  const { sent, skipped, seconds } = await openLoopEmits(c, ({ keyIndex, statusCode, text, sentAt, answeredAt }) => {
    if (statusCode !== 201) {
      errors++;
      if (errorSamples.length < 5) errorSamples.push(`${statusCode ? `HTTP ${statusCode} ` : ''}${text.slice(0, 160)}`);
      return;
    }
    emits.push([
      keyIndex,
      (JSON.parse(text) as { event: { id: string } }).event.id,
      r3(performance.timeOrigin + sentAt),
      r3(performance.timeOrigin + answeredAt),
    ]);
    ms.push(answeredAt - sentAt);
  });
  return {
    rate: c.rate,
    sent,
    ok: emits.length,
    errors,
    skipped,
    errorSamples,
    startedAt: r3(startedAt),
    seconds: round(seconds),
    latency: latency(ms),
    emits,
  };
}

await clientMain({ polls, emitter });
