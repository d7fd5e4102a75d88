import type { Phase } from './phase.ts';
/**
 * What tracing costs (issue 43): the page (event_feed), emit and long-poll figures of one service
 * with tracing off, on at 100 % and on at 1 % (OTEL_TRACES_SAMPLER=parentbased_traceidratio,
 * OTEL_TRACES_SAMPLER_ARG=0.01), in the same run, each variant a fresh service process on a
 * fresh SQLite database, exporting over OTLP/HTTP (protobuf) to a sink receiver started here that
 * answers 200 and counts the bytes. Sequential calls from one client, so each figure is one
 * call's latency and the server's CPU per call (its /proc counters). Run alone:
 * `tsx bench/phases/tracing.ts` (`--quick`: fewer calls).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createKey } from '../../src/auth/api-keys.ts';
import { openStore } from '../../src/store/open-store.ts';
import { cpuSecondsOf, startServer } from '../processes.ts';

export interface TracingSizes {
  pages: number;
  emits: number;
  polls: number;
}

export interface TracingFigures {
  variant: string;
  pageMsP50: number;
  pageCpuMs: number;
  emitMsP50: number;
  emitCpuMs: number;
  pollWakeMsP50: number;
  exportedBytes: number;
}

const VARIANTS: Array<{ variant: string; env: Record<string, string> }> = [
  { variant: 'off', env: {} },
  { variant: 'on 100 %', env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_always_on' } },
  {
    variant: 'on 1 %',
    env: { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' },
  },
];

const p50 = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round((sorted[Math.floor(sorted.length / 2)] ?? 0) * 1000) / 1000;
};

/** A sink OTLP/HTTP receiver: answers every export 200, counts what it was sent. */
async function startSink() {
  let bytes = 0;
  const server = createServer(async (req, res) => {
    for await (const chunk of req) bytes += (chunk as Buffer).length;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function provision(url: string): Promise<{ write: string; read: string }> {
  const store = openStore(url);
  try {
    await store.migrate();
    const { id } = await store.createWorkspace('Tracing bench', true, Date.now());
    const write = (await createKey(store, { workspaceId: id, permissions: ['write'], mailboxes: null }, Date.now())).key;
    const read = (await createKey(store, { workspaceId: id, permissions: ['read'], mailboxes: null }, Date.now())).key;
    return { write, read };
  } finally {
    await store.close();
  }
}

const EMIT = {
  type: 'mail.received',
  subject: { person: { email: 'bench@example.org' }, refs: { mailbox_id: 'mbx_bench' } },
  data: JSON.parse(readFileSync(new URL('../../schemas/data/mail-received.schema.json', import.meta.url), 'utf8')).examples[0],
};

async function call(url: string, path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${path} answered ${response.status}: ${text.slice(0, 200)}`);
  return JSON.parse(text) as { next_cursor?: string };
}

async function measureVariant(variant: (typeof VARIANTS)[number], sizes: TracingSizes, sink: string): Promise<TracingFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'event-feed-bench-tracing-'));
  const databaseUrl = `sqlite:${join(dir, 'feed.sqlite')}`;
  const keys = await provision(databaseUrl);
  const server = await startServer(databaseUrl, {
    env: { ...variant.env, OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_BSP_SCHEDULE_DELAY: '200' },
  });
  try {
    // Emits, one at a time.
    const emitMs: number[] = [];
    let cpu = cpuSecondsOf(server.pid);
    for (let i = 0; i < sizes.emits; i++) {
      const started = performance.now();
      await call(server.url, '/v1/emit_event', keys.write, EMIT);
      emitMs.push(performance.now() - started);
    }
    const emitCpuMs = ((cpuSecondsOf(server.pid) - cpu) * 1000) / sizes.emits;
    // Pages of up to 100 events from the start, one at a time.
    const pageMs: number[] = [];
    cpu = cpuSecondsOf(server.pid);
    for (let i = 0; i < sizes.pages; i++) {
      const started = performance.now();
      await call(server.url, '/v1/event_feed', keys.read, { limit: 100 });
      pageMs.push(performance.now() - started);
    }
    const pageCpuMs = ((cpuSecondsOf(server.pid) - cpu) * 1000) / sizes.pages;
    // Long-polls held at the head, each woken by one emit: the wake is the poll's answer minus the emit's.
    let { next_cursor: head } = await call(server.url, '/v1/event_feed', keys.read, { limit: 500 });
    while (true) {
      const next = await call(server.url, '/v1/event_feed', keys.read, { after: head, limit: 500 });
      if (next.next_cursor === head) break;
      head = next.next_cursor;
    }
    const wakeMs: number[] = [];
    for (let i = 0; i < sizes.polls; i++) {
      let answeredAt = 0;
      const poll = call(server.url, '/v1/event_feed', keys.read, { after: head }, { prefer: 'wait=10' }).then((page) => {
        answeredAt = performance.now();
        return page;
      });
      await new Promise((resolve) => setTimeout(resolve, 20));
      await call(server.url, '/v1/emit_event', keys.write, EMIT);
      const emittedAt = performance.now();
      head = (await poll).next_cursor;
      wakeMs.push(answeredAt - emittedAt);
    }
    return {
      variant: variant.variant,
      pageMsP50: p50(pageMs),
      pageCpuMs: Math.round(pageCpuMs * 1000) / 1000,
      emitMsP50: p50(emitMs),
      emitCpuMs: Math.round(emitCpuMs * 1000) / 1000,
      pollWakeMsP50: p50(wakeMs),
      exportedBytes: 0,
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The three variants in one run, against one sink receiver; `exportedBytes` is what each sent it. */
export async function measureTracingCost(sizes: TracingSizes = { pages: 300, emits: 300, polls: 50 }): Promise<TracingFigures[]> {
  const sink = await startSink();
  try {
    const figures: TracingFigures[] = [];
    for (const variant of VARIANTS) {
      const before = sink.bytes();
      const measured = await measureVariant(variant, sizes, sink.endpoint);
      figures.push({ ...measured, exportedBytes: sink.bytes() - before });
    }
    return figures;
  } finally {
    await sink.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const quick = process.argv.includes('--quick');
  const figures = await measureTracingCost(quick ? { pages: 60, emits: 60, polls: 10 } : undefined);
  console.table(figures);
}

/** The phase in the bench's table: page, emit and long-poll with tracing off, on at 100 % and at 1 %, in the same run (SQLite). */
export const tracingBenchPhase: Phase = {
  name: 'tracing',
  server: 'own',
  compares: false,
  only: 'sqlite',
  async run(ctx) {
    benchLog(`[${ctx.kind}] tracing: page, emit and long-poll, off / 100 % / 1 %…`);
    ctx.result.tracing = await measureTracingCost(quick ? { pages: 60, emits: 60, polls: 10 } : { pages: 300, emits: 300, polls: 50 });
  },
};

/** The bench's flags are not this module's to parse (it also runs alone, with its own): only --quick is looked at. */
const quick = process.argv.includes('--quick');
const benchLog = (line: string) => console.error(line);
