import type { ServerResponse } from 'node:http';

/**
 * Sends JSON text as is. Given the whole body as a string, Node writes headers and body in one
 * syscall; the length is measured once here.
 */
export function sendJson(res: ServerResponse, status: number, json: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}
