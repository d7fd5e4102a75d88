/**
 * The HTTP server's connection bounds (src/http/connection-gate.ts, server.ts): a cap on open
 * connections that idle ones make room under, a per-address cap, and timeouts that close
 * connections which send nothing, stop half-way through their headers, sit idle, or stop reading
 * their answer. Bounds are generous: the machine is shared, only "closed long before Node's
 * defaults would have" is asserted.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sqliteDatabase } from './support/databases.ts';
import { bigEvent, requestFrom } from './support/edge.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { until } from './support/wait.ts';

interface RawConnection {
  socket: net.Socket;
  received: () => string;
  closed: () => boolean;
  closedAfterMs: () => number | undefined;
}

/** A plain TCP connection to the server, from `localAddress`, that sends exactly what the test writes. */
function connect(url: string, localAddress = '127.0.0.1', send?: string): Promise<RawConnection> {
  const { port } = new URL(url);
  const opened = performance.now();
  let data = '';
  let closedAt: number | undefined;
  const socket = net.connect({ host: '127.0.0.1', port: Number(port), localAddress });
  socket.on('data', (chunk) => (data += chunk.toString('latin1')));
  socket.on('error', () => {});
  socket.on('close', () => (closedAt = performance.now()));
  return new Promise((resolve) => {
    socket.once('connect', () => {
      if (send) socket.write(send);
      resolve({
        socket,
        received: () => data,
        closed: () => closedAt !== undefined,
        closedAfterMs: () => (closedAt === undefined ? undefined : closedAt - opened),
      });
    });
    // Refused before even connecting counts as closed at once.
    socket.once('close', () => resolve({ socket, received: () => data, closed: () => true, closedAfterMs: () => closedAt! - opened }));
  });
}

const post = (path: string, key: string, body: string, contentLength = Buffer.byteLength(body)) =>
  `POST ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n${body}`;

describe('connections beyond MAX_CONNECTIONS, and connections that send nothing', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(await sqliteDatabase(), {
      MAX_CONNECTIONS: '20',
      HEADERS_TIMEOUT_MS: '1000',
      KEEP_ALIVE_TIMEOUT_MS: '1000',
    });
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('100 idle sockets: the oldest make room at once, a request still succeeds meanwhile, and every one is closed within seconds', async () => {
    const key = (await server.key(await server.workspace(), ['read'])).key;
    const idle: RawConnection[] = [];
    for (let i = 0; i < 100; i++) idle.push(await connect(server.url));
    await until('all but 20 idle sockets closed by the server', () => idle.filter((c) => !c.closed()).length <= 20, 5000);
    assert.ok(server.connections.open <= 20, `${server.connections.open} connections held`);
    const meanwhile = await requestFrom(server.url, '127.0.0.1', '/v1/event_feed', key);
    assert.equal(meanwhile.status, 200, 'a request with something to say gets a connection');
    // Node's defaults would keep them 60 s (header timeout) plus up to 30 s (its check interval).
    await until('every idle socket closed', () => idle.every((c) => c.closed()), 10_000);
    assert.equal((await requestFrom(server.url, '127.0.0.1', '/v1/event_feed', key)).status, 200, 'and right after');
  });

  it('a socket that never sends a byte is closed after the header timeout (408), one with half its headers too', async () => {
    const silent = await connect(server.url);
    const half = await connect(server.url, '127.0.0.1', 'GET /healthz HTTP/1.1\r\nHost: test\r\n');
    await until('both closed', () => silent.closed() && half.closed(), 8000);
    for (const connection of [silent, half]) {
      assert.ok(connection.closedAfterMs()! >= 900, `closed after ${connection.closedAfterMs()} ms: not before the timeout`);
      assert.match(connection.received(), /^HTTP\/1\.1 408 /);
    }
  });

  it('an idle keep-alive connection is closed after KEEP_ALIVE_TIMEOUT_MS', async () => {
    const kept = await connect(server.url, '127.0.0.1', 'GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n');
    await until('answered', () => kept.received().includes('"ok"'), 5000);
    assert.equal(kept.closed(), false);
    // Node closes at the timeout plus 1 s of its own margin; its default is 5 s.
    await until('closed', () => kept.closed(), 4500);
  });
});

describe('connections per client address', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(await sqliteDatabase(), { MAX_CONNECTIONS_PER_ADDRESS: '5', HEADERS_TIMEOUT_MS: '5000' });
    key = (await server.key(await server.workspace(), ['read'])).key;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('one address holds at most its cap: idle connections make room, busy ones are kept, other addresses are unaffected', async () => {
    // Five requests whose bodies never finish: busy connections.
    let received = 0;
    server.server.on('request', (req) => void (req.socket.remoteAddress === '127.0.0.2' && received++));
    const busy: RawConnection[] = [];
    for (let i = 0; i < 5; i++) busy.push(await connect(server.url, '127.0.0.2', post('/v1/event_feed', key, '{', 2)));
    await until('all five requests received', () => received >= 5, 5000);
    const sixth = await connect(server.url, '127.0.0.2');
    await until('a sixth connection from the address refused', () => sixth.closed(), 5000);
    assert.equal(busy.filter((c) => c.closed()).length, 0, 'busy connections are not closed to make room');
    assert.equal((await requestFrom(server.url, '127.0.0.3', '/v1/event_feed', key)).status, 200, 'another address is unaffected');

    // One finishes its request and goes idle: the next connection from the address takes its place.
    busy[0]!.socket.write('}');
    await until('answered', () => busy[0]!.received().startsWith('HTTP/1.1 200'), 5000);
    assert.equal((await requestFrom(server.url, '127.0.0.2', '/v1/event_feed', key)).status, 200);
    await until('the idle connection made room', () => busy[0]!.closed(), 5000);
    for (const c of busy) c.socket.destroy();
  });
});

describe('clients that do not finish sending, or stop reading', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(await sqliteDatabase(), { SOCKET_TIMEOUT_MS: '1500' });
    const ws = await server.workspace();
    const writer = (await server.key(ws, ['write'])).key;
    for (let i = 0; i < 20; i++) assert.equal((await server.post('/v1/emit_event', bigEvent(i), writer)).status, 201);
    key = (await server.key(ws, ['read'])).key;
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  it('a request refused before its body is read closes the connection instead of reading the rest', async () => {
    const refused = await connect(server.url, '127.0.0.1', post('/v1/event_feed', 'efk_nope', '{"limit":', 10_000_000));
    await until('answered and closed', () => refused.closed(), 5000);
    assert.match(refused.received(), /^HTTP\/1\.1 401 /);
    assert.match(refused.received(), /\r\nConnection: close\r\n/i);
  });

  it('a client that stops reading its answers is disconnected, freeing what was queued for it', async () => {
    const serverSide = new Promise<net.Socket>((resolve) => server.server.once('connection', resolve));
    // Thirty ~1 MB pages asked for at once (pipelined), never read.
    const body = '{"limit":20}';
    const reader = await connect(server.url, '127.0.0.1', post('/v1/event_feed', key, body).repeat(30));
    reader.socket.pause();
    const socket = await serverSide;
    let closed = false;
    socket.once('close', () => (closed = true));
    await until('the server closed the stalled connection', () => closed, 10_000);
    reader.socket.destroy();
  });
});
