import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { addressKey } from '../front-door/client-address.ts';

export interface ConnectionLimits {
  /** Most connections open at once. */
  maxConnections: number;
  /** Most connections open at once from one address (by /64 for IPv6); 0: no such cap (behind a proxy, every connection is the proxy's). */
  maxPerAddress: number;
}

interface Tracked {
  address: string;
  /** Requests received and not yet answered on this connection. */
  inFlight: number;
}

/**
 * Bounds the connections a server holds, so that no client can take every file descriptor.
 *
 * A connection is fresh (open, no request yet), busy (a request being answered) or idle (between
 * requests). When a new connection would pass a cap, a connection that is not working makes room:
 * the oldest fresh one, else the one idle the longest; a client holding connections it does not
 * use cannot keep out one that has a request to make. Only when every connection under the cap is
 * busy is the new one closed at once. Fresh and idle connections do not last anyway: the server's
 * timeouts close a connection without complete headers within the header timeout, an idle one
 * after the keep-alive timeout (httpServerOptions).
 */
export class ConnectionGate {
  readonly #tracked = new Map<Socket, Tracked>();
  /** Fresh connections, oldest first. */
  readonly #fresh = new Set<Socket>();
  /** Idle connections, longest idle first. */
  readonly #idle = new Set<Socket>();
  readonly #byAddress = new Map<string, Set<Socket>>();
  /** Connections closed by the gate (to make room, or refused): for tests and metrics. */
  evicted = 0;
  refused = 0;

  constructor(
    server: Server,
    readonly limits: ConnectionLimits,
  ) {
    server.on('connection', (socket: Socket) => this.#admit(socket));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.#started(req.socket, res));
  }

  get open(): number {
    return this.#tracked.size;
  }

  #admit(socket: Socket): void {
    const address = addressKey(socket.remoteAddress ?? 'unknown');
    const { maxConnections, maxPerAddress } = this.limits;
    if (this.#tracked.size >= maxConnections && !this.#evictOne(this.#fresh) && !this.#evictOne(this.#idle)) return this.#refuse(socket);
    const ofAddress = this.#byAddress.get(address);
    if (maxPerAddress > 0 && ofAddress && ofAddress.size >= maxPerAddress && !this.#evictOfAddress(ofAddress)) return this.#refuse(socket);

    this.#tracked.set(socket, { address, inFlight: 0 });
    this.#fresh.add(socket);
    if (ofAddress) ofAddress.add(socket);
    else this.#byAddress.set(address, new Set([socket]));
    socket.once('close', () => this.#forget(socket));
  }

  #started(socket: Socket, res: ServerResponse): void {
    const tracked = this.#tracked.get(socket);
    if (!tracked) return;
    tracked.inFlight++;
    this.#fresh.delete(socket);
    this.#idle.delete(socket);
    res.once('close', () => {
      if (--tracked.inFlight === 0 && this.#tracked.has(socket)) this.#idle.add(socket);
    });
  }

  /** Closes the first connection of `among` (the oldest), if any. */
  #evictOne(among: Set<Socket>): boolean {
    const socket = among.values().next().value;
    if (!socket) return false;
    this.#close(socket);
    return true;
  }

  /** Closes the address's oldest connection that is not working, if any. */
  #evictOfAddress(ofAddress: Set<Socket>): boolean {
    let candidate: Socket | undefined;
    for (const socket of ofAddress) {
      if (this.#fresh.has(socket)) {
        candidate = socket;
        break;
      }
      if (!candidate && this.#idle.has(socket)) candidate = socket;
    }
    if (!candidate) return false;
    this.#close(candidate);
    return true;
  }

  #close(socket: Socket): void {
    this.evicted++;
    this.#forget(socket);
    socket.destroy();
  }

  #refuse(socket: Socket): void {
    this.refused++;
    socket.destroy();
  }

  #forget(socket: Socket): void {
    const tracked = this.#tracked.get(socket);
    if (!tracked) return;
    this.#tracked.delete(socket);
    this.#fresh.delete(socket);
    this.#idle.delete(socket);
    const ofAddress = this.#byAddress.get(tracked.address);
    ofAddress?.delete(socket);
    if (ofAddress?.size === 0) this.#byAddress.delete(tracked.address);
  }
}
