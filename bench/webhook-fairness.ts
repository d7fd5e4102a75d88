/**
 * The webhooks phase: how long another workspace's deliveries wait while one workspace keeps 16
 * slow endpoints always due and a tarpit busy (issue 18 §2). A server of its own on the bench
 * database (WEBHOOKS_ALLOW_INSECURE=1, so that it may deliver to local receivers; every other
 * setting its default), receivers in this process:
 *   noisy   16 endpoints answering 200 after 2 s, a backlog of 30 events each to start with and 5
 *           more events a second, so they are always due; plus a tarpit endpoint answering after
 *           10 s (the default WEBHOOK_TIMEOUT_MS: it holds its slot for the whole timeout)
 *   victim  another workspace's one endpoint, answering at once, emitted to twice a second
 * The victim's latency is from the start of its emit_event request to the delivery's arrival.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { createKey } from '../src/auth/api-keys.ts';
import { startServer } from './processes.ts';
import { benchTraffic } from './seed.ts';
import { latency, sleep, type Latency } from './stats.ts';
import { openStore } from '../src/store/open-store.ts';
import type { Store } from '../src/store/port.ts';

const NOISY_ENDPOINTS = 16;
const NOISY_ANSWER_MS = 2000;
const TARPIT_ANSWER_MS = 10_000;
const NOISY_BACKLOG = 30;
const NOISY_EVENTS_PER_SECOND = 5;
const VICTIM_EVENTS_PER_SECOND = 2;
// How long the victim's last deliveries may take to arrive before they count as undelivered.
const DRAIN_SECONDS = 15;

export interface WebhookFairnessResult {
  seconds: number;
  serverEnv: Record<string, string>;
  /** latencyMs: from the start of the emit to the delivery's arrival; emitMs: the emit_event requests alone. */
  victim: { emitted: number; delivered: number; allDelivered: boolean; latencyMs: Latency; emitMs: Latency };
  noisy: { emitted: number; delivered: number; tarpitRequests: number };
}

/** Local endpoints: /noisy/<i>, /tarpit and /victim on one HTTP server, each answering as above. */
async function startReceivers() {
  const arrivals = new Map<string, number>();
  let noisyDelivered = 0;
  let tarpitRequests = 0;
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, res: ServerResponse) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      res.end();
    }, ms);
    timers.add(timer);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/victim') {
        arrivals.set(String(req.headers['webhook-id']), performance.now());
        res.end();
      } else if (req.url === '/tarpit') {
        tarpitRequests++;
        later(TARPIT_ANSWER_MS, res);
      } else {
        noisyDelivered++;
        later(NOISY_ANSWER_MS, res);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    arrivals,
    counts: () => ({ noisyDelivered, tarpitRequests }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function webhookFairness(
  databaseUrl: string,
  options: { seconds: number; env?: Record<string, string>; root?: string; log: (line: string) => void },
): Promise<WebhookFairnessResult> {
  const serverEnv = { WEBHOOKS_ALLOW_INSECURE: '1', ...options.env };
  const receivers = await startReceivers();
  const server = await startServer(databaseUrl, { env: serverEnv, root: options.root });
  const pool = new Pool(server.url, { connections: 8 });
  const post = async (path: string, key: string, body: unknown) => {
    const { statusCode, body: answer } = await pool.request({
      method: 'POST',
      path,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await answer.text();
    if (statusCode >= 300) throw new Error(`${path} answered ${statusCode}: ${text.slice(0, 200)}`);
    return JSON.parse(text) as { event?: { id: string } };
  };
  try {
    const db = openStore(databaseUrl);
    const tenants: Array<{ admin: string; write: string }> = [];
    try {
      for (const name of ['bench noisy webhooks', 'bench victim webhooks']) {
        const ws = await db.createWorkspace(name, false, Date.now());
        tenants.push({
          admin: (await createKey(db, { workspaceId: ws.id, permissions: ['admin'], mailboxes: null }, Date.now())).key,
          write: (await createKey(db, { workspaceId: ws.id, permissions: ['write'], mailboxes: null }, Date.now())).key,
        });
      }
    } finally {
      await db.close();
    }
    const [noisy, victim] = tenants as [(typeof tenants)[0], (typeof tenants)[0]];
    await post('/v1/set_webhook', noisy.admin, { url: `${receivers.base}/tarpit` });
    for (let i = 0; i < NOISY_ENDPOINTS; i++) await post('/v1/set_webhook', noisy.admin, { url: `${receivers.base}/noisy/${i}` });
    await post('/v1/set_webhook', victim.admin, { url: `${receivers.base}/victim` });

    const bodies = benchTraffic(2000, 7_100_001, Date.now() - 3_600_000).map((e) => ({ ...e, occurred_at: undefined }));
    let next = 0;
    const body = () => bodies[next++ % bodies.length]!;
    for (let i = 0; i < NOISY_BACKLOG; i++) await post('/v1/emit_event', noisy.write, body());
    let noisyEmitted = NOISY_BACKLOG;
    await sleep(1000); // the noisy endpoints take their slots
    options.log(
      `  noisy workspace: ${NOISY_ENDPOINTS} endpoints answering after ${NOISY_ANSWER_MS} ms, a tarpit answering after ${TARPIT_ANSWER_MS} ms; victim emitting ${VICTIM_EVENTS_PER_SECOND}/s for ${options.seconds} s`,
    );

    // Open loops at fixed rates: a slow answer delays no later emit.
    const emittedAt = new Map<string, number>();
    const emitMs: number[] = [];
    const pending: Array<Promise<unknown>> = [];
    const started = performance.now();
    const loop = async (rate: number, emit: () => Promise<unknown>) => {
      for (let i = 0; performance.now() - started < options.seconds * 1000; i++) {
        const due = started + (i * 1000) / rate;
        if (due > performance.now()) await sleep(due - performance.now());
        pending.push(emit());
      }
    };
    await Promise.all([
      loop(VICTIM_EVENTS_PER_SECOND, async () => {
        const at = performance.now();
        const { event } = await post('/v1/emit_event', victim.write, body());
        emittedAt.set(event!.id, at);
        emitMs.push(performance.now() - at);
      }),
      loop(NOISY_EVENTS_PER_SECOND, async () => {
        await post('/v1/emit_event', noisy.write, body());
        noisyEmitted++;
      }),
    ]);
    await Promise.all(pending);
    const deadline = performance.now() + DRAIN_SECONDS * 1000;
    while ([...emittedAt.keys()].some((id) => !receivers.arrivals.has(id)) && performance.now() < deadline) await sleep(50);

    // An undelivered event counts as having waited until now: it weighs on the percentiles too.
    const end = performance.now();
    const waits = [...emittedAt].map(([id, at]) => (receivers.arrivals.get(id) ?? end) - at);
    const delivered = [...emittedAt.keys()].filter((id) => receivers.arrivals.has(id)).length;
    return {
      seconds: options.seconds,
      serverEnv,
      victim: {
        emitted: emittedAt.size,
        delivered,
        allDelivered: delivered === emittedAt.size,
        latencyMs: latency(waits),
        emitMs: latency(emitMs),
      },
      noisy: { emitted: noisyEmitted, delivered: receivers.counts().noisyDelivered, tarpitRequests: receivers.counts().tarpitRequests },
    };
  } finally {
    await pool.close();
    // Receivers first: the server's attempts in flight then end at once, and it stops quickly.
    await receivers.close();
    await server.stop();
  }
}

/**
 * The phase: the service's defaults, then (full runs only) with WEBHOOK_SLOTS_PER_WORKSPACE raised
 * to every slot, where only the lease budget and the round-robin over workspaces let the victim in.
 */
export async function webhooksPhase(databaseUrl: string, options: { quick: boolean; root?: string; log: (line: string) => void }) {
  const seconds = options.quick ? 8 : 30;
  const result: Record<string, WebhookFairnessResult> = {
    defaults: await webhookFairness(databaseUrl, { seconds, root: options.root, log: options.log }),
  };
  if (!options.quick) {
    options.log('  again, the noisy workspace allowed every slot (WEBHOOK_SLOTS_PER_WORKSPACE=16)');
    result.noisyMayTakeEverySlot = await webhookFairness(databaseUrl, {
      seconds,
      env: { WEBHOOK_SLOTS_PER_WORKSPACE: '16' },
      root: options.root,
      log: options.log,
    });
  }
  return result;
}
