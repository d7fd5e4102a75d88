import type { ServerResponse } from 'node:http';

/**
 * Sends JSON text, or the chunks of its UTF-8 bytes, as is. A small body comes as a string: Node
 * writes headers and body in one syscall. A feed page comes as bytes from the database, neither
 * decoded nor copied: its chunks go out together (one writev).
 */
export function sendJson(res: ServerResponse, status: number, json: string | Buffer[]): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', jsonByteLength(json));
  if (typeof json === 'string') {
    res.end(json);
    return;
  }
  res.cork();
  for (const chunk of json.slice(0, -1)) res.write(chunk);
  res.end(json.at(-1));
}

/** The bytes sendJson sends for this body. */
export function jsonByteLength(json: string | Buffer[]): number {
  return typeof json === 'string' ? Buffer.byteLength(json) : json.reduce((length, chunk) => length + chunk.length, 0);
}
