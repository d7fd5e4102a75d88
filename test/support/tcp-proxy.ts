/**
 * A TCP proxy 127.0.0.1:<port> → a target (Postgres by default) that a test can break:
 * - cut(): destroys every connection and refuses new ones (the listener is closed: ECONNREFUSED);
 * - blackhole(): keeps connections open but forwards nothing, and accepts new ones that never get
 *   an answer (a network partition: nothing fails, everything waits);
 * - restore(): back to forwarding (blackholed connections are dropped).
 * With `delayMs`, what the target sends reaches the client that much later, in order (a far or
 * busy network: Postgres's notifications arrive late, and so does everything else).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string;
  cut(): Promise<void>;
  blackhole(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
  /** Connections accepted so far. */
  readonly accepted: number;
}

export async function startTcpProxy(
  target: { host: string; port: number } = { host: '127.0.0.1', port: 5432 },
  options: { delayMs?: number } = {},
): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let mode: 'forward' | 'cut' | 'blackhole' = 'forward';
  let accepted = 0;
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const plumb = (client: Socket) => {
    const upstream = connect(target.port, target.host);
    track(upstream);
    client.pipe(upstream);
    const delayMs = options.delayMs ?? 0;
    if (delayMs === 0) upstream.pipe(client);
    else {
      // Timers of one delay fire in the order they were set: the bytes stay in order.
      upstream.on('data', (chunk) => setTimeout(() => mode === 'forward' && client.write(chunk), delayMs));
      upstream.on('end', () => setTimeout(() => client.end(), delayMs));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  };
  const onConnection = (client: Socket) => {
    accepted++;
    track(client);
    if (mode === 'cut') return client.destroy();
    if (mode === 'blackhole') return; // read nothing, answer nothing
    plumb(client);
  };

  let server: Server = createServer(onConnection);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  const dropAll = () => {
    for (const socket of sockets) socket.destroy();
  };
  const closeListener = () => new Promise<void>((resolve) => server.close(() => resolve()));

  return {
    port,
    via(url: string) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    async cut() {
      mode = 'cut';
      const closed = closeListener();
      dropAll();
      await closed;
    },
    blackhole() {
      mode = 'blackhole';
      for (const socket of sockets) {
        socket.unpipe();
        socket.pause();
      }
    },
    async restore() {
      const wasCut = mode === 'cut';
      if (mode === 'blackhole') dropAll();
      mode = 'forward';
      if (wasCut) {
        server = createServer(onConnection);
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, '127.0.0.1', () => resolve());
        });
      }
    },
    async close() {
      mode = 'cut';
      const closed = server.listening ? closeListener() : Promise.resolve();
      dropAll();
      await closed;
    },
    get accepted() {
      return accepted;
    },
  };
}
