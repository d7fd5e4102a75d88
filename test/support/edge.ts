import http from 'node:http';
import type { Knex as Db } from 'knex';
import { sqliteReaderOf } from '../../src/store/sqlite/adapter.ts';
import { sampleEvent } from './contract.ts';

export interface EdgeAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

/**
 * One request on a connection of its own from a given local address: any of 127.0.0.0/8 reaches
 * a server listening on 127.0.0.1, and the server sees that address as the client's.
 */
export function requestFrom(
  baseUrl: string,
  localAddress: string,
  path: string,
  key?: string,
  method = 'POST',
  body = '{}',
  headers: Record<string, string> = {},
): Promise<EdgeAnswer> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        localAddress,
        agent: false,
        headers: {
          ...(method === 'POST' ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? body : undefined);
  });
}

/**
 * How many statements matching `pattern` (by default: key lookups) a server's database handle ran
 * while `work` ran: through knex on either database, and on SQLite's read connection too.
 */
export async function keyLookupsDuring(db: Db, work: () => Promise<unknown>, pattern = /api_keys/i): Promise<number> {
  let count = 0;
  const onQuery = (query: { sql: string }) => {
    if (pattern.test(query.sql)) count++;
  };
  db.on('query', onQuery);
  const reader = sqliteReaderOf(db);
  const rows = reader?.rows;
  if (reader) {
    reader.rows = function <T>(this: typeof reader, sql: string, bindings: readonly unknown[]): T[] {
      if (pattern.test(sql)) count++;
      return rows!.call(this, sql, bindings) as T[];
    };
  }
  try {
    await work();
  } finally {
    db.off('query', onQuery);
    if (reader) reader.rows = rows!;
  }
  return count;
}

/** A valid mail.received event of about 48 KB (150 recipients with long display names, a 998-character subject line). */
export function bigEvent(n: number) {
  const event = sampleEvent('mbx_big', n);
  return {
    ...event,
    data: {
      ...event.data,
      to: Array.from({ length: 150 }, (_, j) => ({
        email: `destinataire${j}.${n}@exemple-de-domaine.fr`,
        name: `Destinataire ${j} ${'N'.repeat(230)}`,
      })),
      subject_line: `Commande ${n} ${'s'.repeat(980)}`,
    },
  };
}
