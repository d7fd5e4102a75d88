/**
 * A browser's EventSource follows the feed (issue 31, part 3): `stream_token` mints a short-lived
 * token that opens `GET /v1/event_feed/stream` (an EventSource sends no header), with its key's
 * workspace and mailboxes, refused once its key is revoked, never logged. Tested with the tools
 * people use: the `eventsource` package (no custom fetch, on the registry's Node 22) and headless
 * Chromium's own EventSource on a page of another origin (CORS), each through the whole feed, a live
 * event and a resume after the connection dropped (Last-Event-ID).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser } from '@playwright/test';
import pino from 'pino';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds, sqliteDatabase } from './support/databases.ts';
import { FakeClock } from './support/fake-clock.ts';
import { outsideTools } from './support/outside-tools.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { startTcpProxy } from './support/tcp-proxy.ts';
import { until } from './support/wait.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noBrowser = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;

interface Message {
  id?: string;
  event?: string;
  data: string;
}

/** A GET stream read as its messages (EventSource's parsing: fields, a blank line ends a message, ':' comments). */
function readStream(url: string, headers: Record<string, string> = {}) {
  const gone = new AbortController();
  const state = { status: 0, headers: new Headers(), messages: [] as Message[], ended: false, body: '' };
  const done = (async () => {
    const res = await fetch(url, { signal: gone.signal, headers });
    state.status = res.status;
    state.headers = res.headers;
    if (!res.headers.get('content-type')?.startsWith('text/event-stream')) {
      state.body = await res.text();
      state.ended = true;
      return;
    }
    const decoder = new TextDecoder();
    let buffer = '';
    let current: Message = { data: '' };
    let hasData = false;
    try {
      for await (const chunk of res.body!) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let newline: number;
        while ((newline = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line === '') {
            if (hasData) state.messages.push(current);
            current = { data: '' };
            hasData = false;
          } else if (!line.startsWith(':')) {
            const colon = line.indexOf(':');
            const [field, value] = [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')];
            if (field === 'data') {
              current.data += (hasData ? '\n' : '') + value;
              hasData = true;
            } else if (field === 'id') current.id = value;
            else if (field === 'event') current.event = value;
          }
        }
      }
    } catch {}
    state.ended = true;
  })().catch(() => void (state.ended = true));
  return { state, close: () => gone.abort(), done };
}

async function mint(server: TestServer, key: string, body: Record<string, unknown> = {}) {
  const res = await server.post('/v1/stream_token', body, key);
  assert.equal(res.status, 200, res.text);
  return res.json as { token: string; expires_at: string; stream_url: string };
}

async function emit(server: TestServer, key: string, mailbox: string, n: number): Promise<any> {
  const res = await server.post('/v1/emit_event', sampleEvent(mailbox, n), key);
  assert.equal(res.status, 201, res.text);
  return res.json.event;
}

/** Every event of the feed by JSON pages, for comparison. */
async function wholeFeed(server: TestServer, key: string): Promise<any[]> {
  const events: any[] = [];
  let after: string | undefined;
  for (;;) {
    const res = await server.post('/v1/event_feed', after === undefined ? { limit: 500 } : { after, limit: 500 }, key);
    if (res.json.events.length === 0) return events;
    events.push(...res.json.events);
    after = res.json.next_cursor;
  }
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`stream_token and GET /v1/event_feed/stream on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let ws: string;
    let writer: string;
    let reader: { id: string; key: string };
    const clock = new FakeClock(Date.now());

    before(async () => {
      server = await startTestServer(await create(), { CORS_ALLOWED_ORIGINS: 'https://app.example.com' }, { clock });
      ws = await server.workspace();
      writer = (await server.key(ws, ['read', 'write'])).key;
      reader = await server.key(ws, ['read']);
      await server.db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 12 }, (_, i) => sampleEvent(['mbx_a', 'mbx_b'][i % 2], i)),
        ),
      );
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    it('mints a token for a key with read, bounded in time, and refuses what event_feed would refuse', async () => {
      const minted = await mint(server, reader.key, { ttl_seconds: 300 });
      assert.match(minted.token, /^efs_[A-Za-z0-9_-]{40,200}$/);
      assert.equal(minted.stream_url, `/v1/event_feed/stream?token=${minted.token}`);
      const seconds = (Date.parse(minted.expires_at) - clock.now().getTime()) / 1000;
      assert.ok(seconds > 299 && seconds <= 301, `expires in ${seconds} s`);
      const byDefault = await mint(server, reader.key);
      assert.ok(Math.abs((Date.parse(byDefault.expires_at) - clock.now().getTime()) / 1000 - 600) <= 1, 'ten minutes by default');
      for (const body of [{ ttl_seconds: 59 }, { ttl_seconds: 3601 }, { ttl_seconds: '300' }, { scope: 'all' }]) {
        const refused = await server.post('/v1/stream_token', body, reader.key);
        assert.equal(refused.status, 400, `${JSON.stringify(body)}: ${refused.text}`);
      }
      const noRead = (await server.key(ws, ['write'])).key;
      assert.equal((await server.post('/v1/stream_token', {}, noRead)).status, 403);
      assert.equal((await server.post('/v1/stream_token', {})).status, 401);
    });

    it('streams the same events as the JSON pages, as unnamed messages whose ids are cursors, with after and limit in the query', async () => {
      const pages = await wholeFeed(server, reader.key);
      const { stream_url } = await mint(server, reader.key);
      const stream = readStream(`${server.url}${stream_url}&limit=5`);
      await until('the stored events arrive', () => stream.state.messages.length >= pages.length);
      assert.equal(stream.state.status, 200);
      assert.deepEqual(
        stream.state.messages.map((m) => JSON.parse(m.data).id),
        pages.map((e) => e.id),
      );
      assert.ok(
        stream.state.messages.every((m) => m.event === undefined),
        'no event: line (onmessage gets each)',
      );
      // Each id is the cursor after its event: the stream from it starts with the next event.
      const third = stream.state.messages[2]!.id!;
      stream.close();
      const resumed = readStream(`${server.url}${stream_url}&after=${encodeURIComponent(third)}`);
      await until('the events after the third arrive', () => resumed.state.messages.length >= pages.length - 3);
      assert.equal(JSON.parse(resumed.state.messages[0]!.data).id, pages[3].id);
      resumed.close();
    });

    it('resumes after Last-Event-ID, in place of after, and carries a restricted key only its mailboxes', async () => {
      const pages = await wholeFeed(server, reader.key);
      const { stream_url } = await mint(server, reader.key);
      const first = readStream(`${server.url}${stream_url}`);
      await until('the events arrive', () => first.state.messages.length >= pages.length);
      const lastId = first.state.messages[4]!.id!;
      first.close();
      const resumed = readStream(`${server.url}${stream_url}`, { 'last-event-id': lastId });
      await until('the rest arrives', () => resumed.state.messages.length >= pages.length - 5);
      assert.deepEqual(
        resumed.state.messages.map((m) => JSON.parse(m.data).id),
        pages.slice(5).map((e) => e.id),
      );
      resumed.close();

      const restricted = await server.key(ws, ['read'], ['mbx_b']);
      const mine = (await wholeFeed(server, restricted.key)).map((e) => e.id);
      assert.ok(mine.length > 0);
      const theirs = readStream(`${server.url}${(await mint(server, restricted.key)).stream_url}`);
      await until("the restricted key's events arrive", () => theirs.state.messages.length >= mine.length);
      const live = await emit(server, writer, 'mbx_b', 99);
      await emit(server, writer, 'mbx_a', 98);
      await until('the live event of its mailbox arrives', () => theirs.state.messages.some((m) => JSON.parse(m.data).id === live.id));
      assert.ok(
        theirs.state.messages.every((m) => JSON.parse(m.data).subject.refs.mailbox_id === 'mbx_b'),
        'only its mailbox',
      );
      theirs.close();
    });

    it('refuses, before any stream, a missing, altered or expired token, a key revoked, a bad parameter; a token opens nothing else', async () => {
      const { token, stream_url } = await mint(server, reader.key, { ttl_seconds: 60 });
      const status = async (path: string) => {
        const res = await fetch(server.url + path);
        return { status: res.status, body: JSON.parse(await res.text()) };
      };
      assert.equal((await status('/v1/event_feed/stream')).status, 401);
      const altered = token.slice(0, -3) + (token.endsWith('AAA') ? 'BBB' : 'AAA');
      assert.equal((await status(`/v1/event_feed/stream?token=${altered}`)).status, 401);
      assert.equal((await status(`/v1/event_feed/stream?token=${reader.key}`)).status, 401, 'an API key is not a stream token');
      for (const query of ['&limit=0', '&limit=ten', '&after=garbage', '&from=now', `&token=${token}`]) {
        const refused = await status(`${stream_url}${query}`);
        assert.equal(refused.status, 400, `${query}: ${JSON.stringify(refused.body)}`);
        assert.equal(refused.body.error.code, 'invalid_argument');
      }
      const asBearer = await server.post('/v1/event_feed', {}, token);
      assert.equal(asBearer.status, 401, 'a stream token is not an API key');
      assert.equal((await server.post('/v1/stream_token', {}, token)).status, 401);

      clock.advanceDays(61 / 86_400);
      const expired = await status(stream_url);
      assert.equal(expired.status, 401);
      assert.match(expired.body.error.message, /stream token/);

      const doomed = await server.key(ws, ['read']);
      const doomedUrl = (await mint(server, doomed.key)).stream_url;
      const open = readStream(`${server.url}${doomedUrl}`);
      await until('the stream is open', () => open.state.messages.length > 0);
      await server.revokeKey(doomed.id);
      await until('the open stream ends', () => open.state.ended, 5000);
      assert.equal(open.state.messages.at(-1)?.event, 'error');
      assert.equal(JSON.parse(open.state.messages.at(-1)!.data).error.code, 'unauthorized');
      assert.equal((await status(doomedUrl)).status, 401, 'its tokens are refused once the key is revoked');
    });

    it('answers pages of listed origins with CORS (GET and the preflight of a reconnection), and others without', async () => {
      const { stream_url } = await mint(server, reader.key);
      const listed = readStream(`${server.url}${stream_url}`, { origin: 'https://app.example.com' });
      await until('the stream answers', () => listed.state.status !== 0);
      assert.equal(listed.state.headers.get('access-control-allow-origin'), 'https://app.example.com');
      listed.close();
      const other = readStream(`${server.url}${stream_url}`, { origin: 'https://evil.example' });
      await until('the stream answers', () => other.state.status !== 0);
      assert.equal(other.state.headers.get('access-control-allow-origin'), null);
      other.close();
      const preflight = await fetch(`${server.url}${stream_url}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://app.example.com',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'last-event-id',
        },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example.com');
      assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Last-Event-ID/i);
    });
  });
}

describe('a stream token stays out of the logs', () => {
  it('logs the stream request without its token', async () => {
    let logged = '';
    const sink = new Writable({ write: (chunk, _enc, done) => ((logged += chunk.toString()), done()) });
    const server = await startTestServer(await sqliteDatabase(), { LOG_LEVEL: 'debug' }, { log: pino({ level: 'debug' }, sink) });
    try {
      const ws = await server.workspace();
      const { id, key } = await server.key(ws, ['read']);
      const { token, stream_url } = await mint(server, key);
      const stream = readStream(`${server.url}${stream_url}`);
      await until('the stream is open', () => stream.state.status === 200);
      // Ended by the server (the key revoked): its request line is written.
      await server.revokeKey(id);
      await until('the stream ends', () => stream.state.ended);
      await fetch(`${server.url}/v1/event_feed/stream?token=${token}x`);
      await until('both requests are logged', () => (logged.match(/"path":"\/v1\/event_feed\/stream"/g) ?? []).length >= 2);
      assert.ok(!logged.includes(token.slice(4, 40)), 'no token in the logs');
      assert.ok(!logged.includes(key.slice(4)), 'no key in the logs');
    } finally {
      await server.stop();
      await server.database.drop();
    }
  });
});

describe('the eventsource package (no custom fetch) follows the stream, on Node 22', () => {
  it('reads the whole feed, a live event, and resumes after the connection drops', async () => {
    const tools = await outsideTools();
    const server = await startTestServer(await sqliteDatabase());
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
    const dir = mkdtempSync(join(tmpdir(), 'event-feed-eventsource-'));
    try {
      const ws = await server.workspace();
      const writer = (await server.key(ws, ['read', 'write'])).key;
      await server.db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 20 }, (_, i) => sampleEvent('mbx_a', i)),
        ),
      );
      const { stream_url } = await mint(server, writer);
      // The package as a reader would use it: new EventSource(url), onmessage; it reconnects by itself with Last-Event-ID.
      const script = join(dir, 'follow.mjs');
      writeFileSync(
        script,
        `import { EventSource } from ${JSON.stringify(join(tools.dir, 'node_modules/eventsource/dist/index.js'))};
const source = new EventSource(process.argv[2]);
source.onmessage = (e) => console.log(JSON.stringify({ id: e.lastEventId, event: JSON.parse(e.data).id }));
source.onerror = () => console.log(JSON.stringify({ error: true }));
setTimeout(() => { source.close(); process.exit(0); }, Number(process.argv[3]));
`,
      );
      const lines: string[] = [];
      const child = execFile(tools.node22, [script, proxy.via(server.url).replace(/\/$/, '') + stream_url, '30000']);
      child.stdout!.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
      const received = () => lines.map((line) => JSON.parse(line)).filter((m) => m.event);
      await until('the stored events arrive', () => received().length >= 20, 20_000);
      const live = await emit(server, writer, 'mbx_a', 50);
      await until('the live event arrives', () => received().some((m) => m.event === live.id), 10_000);
      await proxy.cut();
      const afterDrop = await emit(server, writer, 'mbx_a', 51);
      await proxy.restore();
      await until(
        'the event emitted while disconnected arrives after the reconnection',
        () => received().some((m) => m.event === afterDrop.id),
        20_000,
      );
      child.kill();
      const ids = received().map((m) => m.event);
      assert.equal(new Set(ids).size, ids.length, 'no event twice across the reconnection');
      assert.deepEqual(
        ids,
        (await wholeFeed(server, writer)).map((e) => e.id),
        'every event, in order',
      );
      assert.ok(
        lines.some((line) => line.includes('"error"')),
        'the drop was seen (and the package reconnected)',
      );
    } finally {
      await proxy.close();
      await server.stop();
      await server.database.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a browser's own EventSource follows the stream from a page of another origin", { skip: noBrowser }, () => {
  let browser: Browser;
  let page: Server;
  before(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
  });
  after(async () => {
    await browser?.close();
    page?.close();
  });

  it('reads the whole feed, a live event, and resumes after the connection drops (Last-Event-ID, through CORS)', async () => {
    page = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>page</title>'));
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', () => resolve()));
    const pageOrigin = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
    const server = await startTestServer(await sqliteDatabase(), { CORS_ALLOWED_ORIGINS: pageOrigin });
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
    try {
      const ws = await server.workspace();
      const writer = (await server.key(ws, ['read', 'write'])).key;
      await server.db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 30 }, (_, i) => sampleEvent('mbx_a', i)),
        ),
      );
      const { stream_url } = await mint(server, writer);
      const tab = await (await browser.newContext()).newPage();
      await tab.goto(pageOrigin);
      await tab.evaluate(
        (url) => {
          const w = window as unknown as { received: string[]; errors: number };
          w.received = [];
          w.errors = 0;
          const source = new EventSource(url);
          source.onmessage = (e) => w.received.push(JSON.parse(e.data).id);
          source.onerror = () => w.errors++;
        },
        proxy.via(server.url).replace(/\/$/, '') + stream_url,
      );
      const received = () => tab.evaluate(() => (window as unknown as { received: string[] }).received);
      await until('the stored events arrive', async () => (await received()).length >= 30, 20_000);
      const live = await emit(server, writer, 'mbx_a', 60);
      await until('the live event arrives', async () => (await received()).includes(live.id), 10_000);
      await proxy.cut();
      const afterDrop = await emit(server, writer, 'mbx_a', 61);
      await proxy.restore();
      await until(
        'the event emitted while disconnected arrives after the reconnection',
        async () => (await received()).includes(afterDrop.id),
        20_000,
      );
      const ids = await received();
      assert.equal(new Set(ids).size, ids.length, 'no event twice across the reconnection');
      assert.deepEqual(
        ids,
        (await wholeFeed(server, writer)).map((e) => e.id),
        'every event, in order',
      );
      assert.ok(
        (await tab.evaluate(() => (window as unknown as { errors: number }).errors)) >= 1,
        'the drop was seen (and the browser reconnected)',
      );
    } finally {
      await proxy.close();
      await server.stop();
      await server.database.drop();
    }
  });
});
