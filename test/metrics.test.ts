/**
 * The metrics (issue 23, part 1): a scrape of METRICS_PORT parsed strictly as Prometheus text,
 * then requests of every kind, then a second scrape whose counters and histograms moved by exactly
 * what those requests should have counted; the gauges read at scrape time; no per-key or
 * per-workspace label, and neither key nor workspace id anywhere in the output; the metrics and
 * the API on separate ports.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OPERATION_IDS } from '../generated/operations.ts';
import { ERROR_STATUS } from '../src/base/errors.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { rawToolCall } from './support/mcp.ts';
import { parsePrometheusText, sumOf, valueOf, type Exposition } from './support/prometheus-text.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startReceiver, waitFor } from './support/webhook-receiver.ts';

/** Every value each of our labels may take: fixed sets, nothing a client names. */
const ALLOWED_LABELS: Record<string, (value: string) => boolean> = {
  operation: (v) => v === 'other' || (OPERATION_IDS as readonly string[]).includes(v),
  transport: (v) => v === 'http' || v === 'mcp',
  status: (v) => /^[1-5]\d\d$/.test(v),
  code: (v) => v === 'none' || Object.hasOwn(ERROR_STATUS, v),
  reason: (v) => ['key', 'workspace', 'address', 'held_reads', 'memory', 'draining', 'quota', 'other'].includes(v),
  outcome: (v) => ['delivered', 'retry', 'failed', 'disabled'].includes(v),
  kind: (v) => v === 'long_poll' || v === 'stream',
  state: (v) => ['used', 'free', 'pending'].includes(v),
  le: (v) => v === '+Inf' || Number.isFinite(Number(v)),
};

describe('metrics on METRICS_PORT', () => {
  let server: TestServer;
  let workspace: string;
  let reader: { id: string; key: string };
  let flooder: { id: string; key: string };
  const scrape = async (): Promise<Exposition & { text: string }> => {
    const response = await fetch(server.metricsUrl!);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    return { ...parsePrometheusText(text), text };
  };

  before(async () => {
    server = await startTestServer(await sqliteDatabase(), {
      METRICS_PORT: '0',
      WEBHOOKS_ALLOW_INSECURE: '1',
      WEBHOOK_DISPATCH_INTERVAL_MS: '40',
      // Tokens barely flow back: a key has its burst and no more, an address two requests.
      RATE_LIMIT_PER_SECOND: '0.01',
      RATE_LIMIT_BURST: '40',
      RATE_LIMIT_PER_ADDRESS_PER_SECOND: '0.01',
      RATE_LIMIT_PER_ADDRESS_BURST: '2',
    });
    workspace = await server.workspace();
    reader = await server.key(workspace, ['read', 'write', 'admin']);
    flooder = await server.key(workspace, ['read']);
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('listens on loopback by default, on a port of its own', async () => {
    assert.match(server.metricsUrl!, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.notEqual(new URL(server.metricsUrl!).port, new URL(server.url).port);
    // The API is not served on the metrics port…
    assert.equal((await fetch(new URL('/v1/event_feed', server.metricsUrl!), { method: 'POST' })).status, 404);
    assert.equal((await fetch(new URL('/healthz', server.metricsUrl!))).status, 404);
    // …nor the metrics on the API's (this one is paid by the address: its first token).
    assert.equal((await fetch(`${server.url}/metrics`)).status, 404);
  });

  it('counts requests by operation, transport, status and code; latencies, pages, bytes, appends and refusals by reason', async () => {
    // Both keys authenticate first: from then on they skip the address's bucket.
    assert.equal((await server.post('/v1/feed_cursor', { at: 'now' }, flooder.key)).status, 200);
    assert.equal((await server.post('/v1/emit_event', sampleEvent('mbx_a', 0), reader.key)).status, 201);

    const before = await scrape();
    const ok = await server.post('/v1/event_feed', {}, reader.key);
    assert.equal(ok.status, 200);
    assert.equal((await server.post('/v1/event_feed', { limit: 0 }, reader.key)).status, 400);
    assert.equal((await server.post('/v1/event_feed', {}, 'efk_not_a_key')).status, 401); // the address's second token
    assert.equal((await server.post('/v1/event_feed', {}, 'efk_not_a_key')).status, 429); // the address has none left
    assert.equal((await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), reader.key)).status, 201);
    const tool = await rawToolCall(server.url, reader.key, 'event_feed', '{}');
    assert.equal(tool.status, 200);
    assert.equal(tool.body.result.isError, undefined);
    // The flooder spends its burst: its next call is refused by its key's bucket.
    let refused = 0;
    for (let i = 0; i < 45 && refused === 0; i++)
      if ((await server.post('/v1/feed_cursor', { at: 'now' }, flooder.key)).status === 429) refused++;
    assert.equal(refused, 1);
    const calls =
      valueOf(await scrape(), 'event_feed_requests_total', { operation: 'feed_cursor', transport: 'http', status: '200', code: 'none' }) -
      valueOf(before, 'event_feed_requests_total', { operation: 'feed_cursor', transport: 'http', status: '200', code: 'none' });
    const now = await scrape();

    const moved = (name: string, labels: Record<string, string> = {}) => sumOf(now, name, labels) - sumOf(before, name, labels);
    const requests = (operation: string, transport: string, status: string, code: string) =>
      moved('event_feed_requests_total', { operation, transport, status, code });
    assert.equal(requests('event_feed', 'http', '200', 'none'), 1);
    assert.equal(requests('event_feed', 'http', '400', 'invalid_argument'), 1);
    assert.equal(requests('event_feed', 'http', '401', 'unauthorized'), 1, 'a 401 still names the operation it was for');
    assert.equal(requests('event_feed', 'http', '429', 'rate_limited'), 1);
    assert.equal(requests('emit_event', 'http', '201', 'none'), 1);
    assert.equal(requests('event_feed', 'mcp', '200', 'none'), 1);
    assert.equal(requests('feed_cursor', 'http', '429', 'rate_limited'), 1);
    assert.ok(calls >= 1, 'the flooder was counted while it had tokens');
    assert.equal(moved('event_feed_rate_limited_total', { reason: 'address', transport: 'http' }), 1);
    assert.equal(moved('event_feed_rate_limited_total', { reason: 'key', transport: 'http' }), 1);
    assert.equal(moved('event_feed_request_duration_seconds_count', { operation: 'event_feed', transport: 'http' }), 4);
    assert.equal(moved('event_feed_request_duration_seconds_count', { operation: 'event_feed', transport: 'mcp' }), 1);
    assert.ok(moved('event_feed_request_duration_seconds_sum', { operation: 'event_feed', transport: 'http' }) > 0);
    // Histogram buckets are cumulative: +Inf holds every observation.
    assert.equal(moved('event_feed_request_duration_seconds_bucket', { operation: 'event_feed', transport: 'http', le: '+Inf' }), 4);
    assert.equal(moved('event_feed_pages_served_total', { operation: 'event_feed', transport: 'http' }), 1);
    assert.equal(moved('event_feed_pages_served_total', { operation: 'event_feed', transport: 'mcp' }), 1);
    assert.equal(moved('event_feed_page_bytes_served_total', { operation: 'event_feed', transport: 'http' }), Buffer.byteLength(ok.text));
    assert.ok(moved('event_feed_page_bytes_served_total', { operation: 'event_feed', transport: 'mcp' }) > 0);
    assert.equal(moved('event_feed_events_appended_total'), 1);
    assert.equal(moved('event_feed_group_commit_batch_events_count'), 1);
    assert.equal(moved('event_feed_group_commit_batch_events_bucket', { le: '1' }), 1);
  });

  it('reads its gauges when scraped: held reads by kind, the database pool, Node itself', async () => {
    const poll = server.post(
      '/v1/event_feed',
      { after: (await server.post('/v1/feed_cursor', { at: 'now' }, reader.key)).json.cursor },
      reader.key,
      { prefer: 'wait=10' },
    );
    await waitFor(
      async () => valueOf(await scrape(), 'event_feed_held_reads', { kind: 'long_poll' }) === 1,
      5000,
      'the long-poll to be held',
    );
    const held = await scrape();
    assert.equal(valueOf(held, 'event_feed_held_reads', { kind: 'stream' }), 0);
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 2), reader.key);
    assert.equal((await poll).json.events.length, 1);
    const after = await scrape();
    assert.equal(valueOf(after, 'event_feed_held_reads', { kind: 'long_poll' }), 0);
    // SQLite: knex's pool is the one writing connection.
    assert.equal(valueOf(after, 'event_feed_db_pool_max'), 1);
    assert.equal(
      sumOf(after, 'event_feed_db_pool_connections'),
      valueOf(after, 'event_feed_db_pool_connections', { state: 'used' }) +
        valueOf(after, 'event_feed_db_pool_connections', { state: 'free' }) +
        valueOf(after, 'event_feed_db_pool_connections', { state: 'pending' }),
    );
    assert.equal(after.types.get('nodejs_eventloop_lag_seconds'), 'gauge');
    assert.ok(valueOf(after, 'process_resident_memory_bytes') > 0);
    assert.ok(valueOf(after, 'nodejs_heap_size_used_bytes') > 0);
  });

  it('counts webhook attempts by outcome, and what is pending with the age of the oldest', async () => {
    let failing = true;
    const receiver = await startReceiver((_received, _n, res) => {
      res.statusCode = failing ? 500 : 200;
      res.end();
    });
    try {
      const before = await scrape();
      assert.equal(valueOf(before, 'event_feed_webhook_deliveries_pending'), 0);
      assert.equal(valueOf(before, 'event_feed_webhook_oldest_pending_age_seconds'), 0);
      assert.equal((await server.post('/v1/set_webhook', { url: receiver.url }, reader.key)).status, 200);
      await server.post('/v1/emit_event', sampleEvent('mbx_a', 3), reader.key);
      await waitFor(
        async () =>
          sumOf(await scrape(), 'event_feed_webhook_deliveries_total', { outcome: 'retry' }) >
          sumOf(before, 'event_feed_webhook_deliveries_total', { outcome: 'retry' }),
        5000,
        'a failed attempt',
      );
      // The backlog is looked up at most every 5 s: wait for a look after the delivery was queued.
      await waitFor(async () => valueOf(await scrape(), 'event_feed_webhook_deliveries_pending') === 1, 8000, 'the pending delivery');
      assert.ok(valueOf(await scrape(), 'event_feed_webhook_oldest_pending_age_seconds') >= 0);
      failing = false;
      // The retry after the first failure comes 4–6 s after it; if the look above took longer, that
      // retry failed too, and the next one comes 24–36 s later.
      await waitFor(
        async () => sumOf(await scrape(), 'event_feed_webhook_deliveries_total', { outcome: 'delivered' }) === 1,
        45_000,
        'the delivery',
      );
    } finally {
      await receiver.close();
    }
  });

  it('keeps every label of its own series in a fixed set, and names no key or workspace', async () => {
    const { samples, text } = await scrape();
    const ours = samples.filter((sample) => sample.name.startsWith('event_feed_'));
    assert.ok(ours.length > 50);
    for (const sample of ours) {
      for (const [label, value] of Object.entries(sample.labels)) {
        assert.ok(ALLOWED_LABELS[label]?.(value), `${sample.name}: label ${label}="${value}" is not from a fixed set`);
      }
    }
    for (const secret of [workspace, reader.id, reader.key, flooder.id, flooder.key])
      assert.ok(!text.includes(secret), `the output names ${secret.slice(0, 8)}…`);
  });
});

describe('metrics off', () => {
  it('without METRICS_PORT nothing listens for them and nothing is counted', async () => {
    const server = await startTestServer(await sqliteDatabase());
    try {
      assert.equal(server.metricsUrl, undefined);
      assert.equal(server.services.metrics, undefined);
    } finally {
      await server.stop();
      await server.database.drop();
    }
  });
});
