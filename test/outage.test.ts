/**
 * Database outage on Postgres. The service runs as a child process whose DATABASE_URL goes through
 * a TCP proxy (support/tcp-proxy.ts) under a light read + write load. While the database is cut,
 * every request must fail fast (within FAIL_FAST_MS) with the contract's `internal` error (500 or
 * 503, with a request_id), /healthz stays 200 and /readyz answers 503; after restore, without a
 * restart, /readyz is 200 again within RECOVERY_MS and reads and writes succeed; no acknowledged
 * write is lost. A second test does the same with a network partition (the proxy swallows packets
 * instead of resetting connections). OUTAGE_TEST_MS=<ms> lengthens the outage (default 8000).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newEventId } from '../src/base/ids.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';
import { provision, startProcessServer, type ProcessServer } from './support/process-server.ts';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.ts';

const FAIL_FAST_MS = 6000;
const RECOVERY_MS = 10_000;
const OUTAGE_MS = Number(process.env.OUTAGE_TEST_MS ?? 10_000);
const CLIENT_TIMEOUT_MS = 30_000;

type Phase = 'healthy' | 'outage' | 'recovering' | 'recovered';
interface Call {
  what: 'emit' | 'feed' | 'healthz' | 'readyz';
  phaseAtStart: Phase;
  phaseAtEnd?: Phase;
  started: number;
  ms?: number;
  status?: number;
  text?: string;
  requestId?: string | null;
  clientError?: string;
  emitId?: string;
  body?: string;
}

async function call(
  base: string,
  what: Call['what'],
  phase: () => Phase,
  options: { key?: string; body?: string; emitId?: string } = {},
): Promise<Call> {
  const c: Call = { what, phaseAtStart: phase(), started: Date.now(), emitId: options.emitId, body: options.body };
  const path = what === 'emit' ? '/v1/emit_event' : what === 'feed' ? '/v1/event_feed' : `/${what}`;
  try {
    const response = await fetch(base + path, {
      method: options.body === undefined ? 'GET' : 'POST',
      headers: options.body === undefined ? {} : { authorization: `Bearer ${options.key}`, 'content-type': 'application/json' },
      body: options.body,
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
    });
    c.status = response.status;
    c.requestId = response.headers.get('x-request-id');
    c.text = await response.text();
  } catch (err) {
    c.clientError = String((err as { cause?: unknown }).cause ?? err);
  }
  c.ms = Date.now() - c.started;
  c.phaseAtEnd = phase();
  return c;
}

const describeCall = (c: Call) =>
  `${c.what} started ${c.phaseAtStart}, ended ${c.phaseAtEnd} after ${c.ms} ms → ${c.clientError ?? `${c.status} ${c.text?.slice(0, 200)}`}`;

/** The contract's internal error: 500 or 503, code internal, a request_id equal to X-Request-Id. */
function assertInternalError(c: Call) {
  const where = describeCall(c);
  assert.equal(c.clientError, undefined, `no answer: ${where}`);
  assert.ok(c.status === 500 || c.status === 503, `status 500/503: ${where}`);
  const body = JSON.parse(c.text!);
  assert.equal(contractErrors('Error', body), null, `contract Error shape: ${where}`);
  assert.equal(body.error.code, 'internal', where);
  assert.equal(typeof body.error.request_id, 'string', `request_id: ${where}`);
  assert.equal(body.error.request_id, c.requestId, `request_id is the X-Request-Id: ${where}`);
}

function assertSuccess(c: Call) {
  const where = describeCall(c);
  assert.equal(c.clientError, undefined, `no answer: ${where}`);
  if (c.what === 'emit') assert.ok(c.status === 201 || c.status === 200, where);
  else assert.equal(c.status, 200, where);
}

async function readAll(base: string, key: string): Promise<any[]> {
  const events: any[] = [];
  let after: string | undefined;
  for (;;) {
    const res = await fetch(`${base}/v1/event_feed`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(after === undefined ? { limit: 500 } : { after, limit: 500 }),
    });
    assert.equal(res.status, 200);
    const page = await res.json();
    if (page.events.length === 0) return events;
    events.push(...page.events);
    after = page.next_cursor;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(
  'database outage (postgres through a TCP proxy)',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
    let database: TestDatabase;
    let proxy: TcpProxy;
    let server: ProcessServer;
    let key: string;

    before(async () => {
      database = await postgresDatabase();
      key = (await provision(database.url, { rw: { permissions: ['read', 'write'] } })).keys.rw!;
      proxy = await startTcpProxy();
      server = await startProcessServer({ databaseUrl: proxy.via(database.url) });
    });
    after(async () => {
      await server?.kill();
      await proxy?.close();
      await database?.drop();
    });

    /**
     * Runs a light load (2 writers, 2 readers, probes) through healthy → outage → recovering →
     * recovered, then checks every answer. `breakIt` starts the outage, `restore` ends it.
     */
    async function outage(t: { diagnostic(message: string): void }, label: string, breakIt: () => unknown) {
      let phase: Phase = 'healthy';
      const now = () => phase;
      const calls: Call[] = [];
      const probes: Call[] = [];
      let n = 0;
      let running = true;

      const writer = async () => {
        while (running) {
          const id = newEventId();
          const body = JSON.stringify({ ...sampleEvent('mbx_sales', n++), id });
          calls.push(await call(server.url, 'emit', now, { key, body, emitId: id }));
          await sleep(25);
        }
      };
      const reader = async () => {
        while (running) {
          calls.push(await call(server.url, 'feed', now, { key, body: JSON.stringify({ limit: 20 }) }));
          await sleep(25);
        }
      };
      const prober = async () => {
        while (running) {
          probes.push(await call(server.url, 'healthz', now), await call(server.url, 'readyz', now));
          await sleep(200);
        }
      };
      const load = [writer(), writer(), reader(), reader(), prober()];

      await sleep(1500);
      phase = 'outage';
      const cutAt = Date.now();
      await breakIt();
      await sleep(OUTAGE_MS);
      phase = 'recovering';
      const restoredAt = Date.now();
      await proxy.restore();
      let readyAfter: number | undefined;
      while (Date.now() - restoredAt < RECOVERY_MS + FAIL_FAST_MS) {
        const probe = await call(server.url, 'readyz', now);
        if (probe.status === 200) {
          readyAfter = Date.now() - restoredAt;
          break;
        }
        await sleep(100);
      }
      phase = 'recovered';
      await sleep(2000);
      running = false;
      await Promise.all(load);

      const all = [...calls, ...probes];
      const slowest = Math.max(...all.map((c) => c.ms!));
      const outageCalls = calls.filter((c) => c.phaseAtStart === 'outage' && c.phaseAtEnd === 'outage');
      const failedFastest = outageCalls.map((c) => c.ms!).sort((a, b) => a - b);
      t.diagnostic(
        `${label}: ${calls.length} requests (${outageCalls.length} during the outage, ms p50 ${failedFastest[Math.floor(failedFastest.length / 2)]} ` +
          `max ${failedFastest.at(-1)}), slowest answer overall ${slowest} ms, /readyz 200 again ${readyAfter} ms after restore, ` +
          `process alive: ${server.alive}, proxy connections accepted: ${proxy.accepted}`,
      );

      // The process survived and answered everything.
      assert.ok(
        server.alive,
        `the service process died: ${JSON.stringify(await Promise.race([server.exited, sleep(10)]))}\n${server.output().slice(-3000)}`,
      );
      const unanswered = all.filter((c) => c.clientError !== undefined);
      assert.deepEqual(unanswered.map(describeCall), [], 'every request got an HTTP answer');

      // Fail fast: nothing took longer than FAIL_FAST_MS, whatever the phase.
      const slow = all.filter((c) => c.ms! > FAIL_FAST_MS);
      assert.deepEqual(slow.map(describeCall), [], `every answer within ${FAIL_FAST_MS} ms`);

      // Healthy before.
      for (const c of calls.filter((c) => c.phaseAtEnd === 'healthy')) assertSuccess(c);
      // During the outage: the contract's internal error, every time.
      assert.ok(outageCalls.length >= 4, `some requests ran during the outage (${outageCalls.length})`);
      for (const c of outageCalls) assertInternalError(c);
      // Straddling the cut or the restore: either outcome, but only these two.
      for (const c of calls.filter((c) => c.phaseAtStart !== c.phaseAtEnd && c.phaseAtEnd !== 'recovered')) {
        if (c.status !== undefined && c.status < 300) assertSuccess(c);
        else assertInternalError(c);
      }

      // Probes: liveness always 200; readiness 503 throughout the outage.
      for (const p of probes) if (p.what === 'healthz') assert.equal(p.status, 200, `/healthz: ${describeCall(p)}`);
      const readyDuring = probes.filter((p) => p.what === 'readyz' && p.phaseAtStart === 'outage' && p.phaseAtEnd === 'outage');
      assert.ok(readyDuring.length >= 2, 'readiness was probed during the outage');
      for (const p of readyDuring) assert.equal(p.status, 503, `/readyz during the outage: ${describeCall(p)}`);

      // Recovery without a restart.
      assert.ok(
        readyAfter !== undefined && readyAfter <= RECOVERY_MS,
        `/readyz 200 within ${RECOVERY_MS} ms of restore (after ${readyAfter ?? 'never'})`,
      );
      const recovered = calls.filter((c) => c.phaseAtStart === 'recovered');
      assert.ok(
        recovered.some((c) => c.what === 'emit') && recovered.some((c) => c.what === 'feed'),
        'reads and writes ran after recovery',
      );
      for (const c of recovered) assertSuccess(c);

      // No acknowledged write lost; failed writes are whole or absent, and a retry settles them.
      const acked = calls.filter((c) => c.what === 'emit' && c.status !== undefined && c.status < 300);
      const failed = calls.filter((c) => c.what === 'emit' && !(c.status !== undefined && c.status < 300));
      let ids = new Set((await readAll(server.url, key)).map((e) => e.id));
      for (const c of acked) assert.ok(ids.has(c.emitId!), `acknowledged write ${c.emitId} (${c.phaseAtStart}) was lost`);
      for (const c of failed) {
        const res = await call(server.url, 'emit', now, { key, body: c.body! });
        assert.equal(res.status, ids.has(c.emitId!) ? 200 : 201, `retry of failed write: ${describeCall(res)}`);
      }
      const events = await readAll(server.url, key);
      ids = new Set(events.map((e) => e.id));
      assert.equal(ids.size, events.length, 'ids unique');
      for (const c of [...acked, ...failed]) assert.ok(ids.has(c.emitId!), `${c.emitId} present after retries`);
    }

    it('cut (connections reset, new ones refused): fails fast with internal, /readyz 503, then recovers without a restart', async (t) => {
      await outage(t, 'cut', () => proxy.cut());
    });

    it('partition (packets swallowed, connections hang): fails fast with internal, /readyz 503, then recovers without a restart', async (t) => {
      await outage(t, 'partition', () => proxy.blackhole());
    });
  },
);
