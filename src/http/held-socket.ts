import type { Socket } from 'node:net';

/**
 * The server's idle timeout (SOCKET_TIMEOUT_MS) closes a connection where nothing moves, for a
 * client that stopped reading: not while a read is held on purpose (a long-poll, a stream's wait).
 */
export async function withoutIdleTimeout<T>(socket: Socket, wait: () => Promise<T>): Promise<T> {
  const before = socket.timeout ?? 0;
  socket.setTimeout(0);
  try {
    return await wait();
  } finally {
    if (!socket.destroyed) socket.setTimeout(before);
  }
}
