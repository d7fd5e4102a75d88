/**
 * The floor of long-polling (phase 13): a bare node:http server, no database, no key check beyond a
 * lookup of which workspace a bearer token belongs to. POST /v1/emit_event appends an event to the
 * token's workspace in memory, answers 201 at once and wakes that workspace's held reads;
 * POST /v1/event_feed answers the events after `after` (its own cursors: a sequence number) at once
 * if there are any, else holds the request until the workspace gets an emit or `Prefer: wait=N`
 * runs out (then its cursor back). What wake-up latency the same client, writer and machine allow
 * at best. argv[2]: JSON { workspaceOfKey }; prints the port on stdout once listening.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const { workspaceOfKey } = JSON.parse(process.argv[2]!) as { workspaceOfKey: Record<string, number> };

interface Workspace {
  envelopes: string[]; // envelopes[seq - 1]
  waiters: Set<() => void>;
}
const workspaces = new Map<number, Workspace>();
const workspace = (i: number) => workspaces.get(i) ?? workspaces.set(i, { envelopes: [], waiters: new Set() }).get(i)!;
let ids = 0;

const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
  const bytes = Buffer.from(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(bytes.length), ...headers });
  res.end(bytes);
};

const page = (ws: Workspace, after: number, limit: number, cursor: string | undefined) => {
  const events = ws.envelopes.slice(after, after + limit);
  return `{"events":[${events.join(',')}],"next_cursor":${JSON.stringify(events.length > 0 ? String(after + events.length) : (cursor ?? String(after)))}}`;
};

function handle(req: IncomingMessage, res: ServerResponse, body: Buffer) {
  const key = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  const w = key === undefined ? undefined : workspaceOfKey[key];
  if (w === undefined) return send(res, 401, '{"error":{"code":"unauthenticated","message":"unknown key"}}');
  const ws = workspace(w);
  if (req.url === '/v1/emit_event') {
    const id = `evt_floor_${(++ids).toString(36).padStart(8, '0')}`;
    // The emitted body as the stored envelope, with its id first: a page as long as the service's.
    const envelope = `{"id":"${id}",${body.toString('utf8').slice(1)}`;
    ws.envelopes.push(envelope);
    send(res, 201, `{"event":${envelope}}`);
    for (const wake of [...ws.waiters]) wake();
    return;
  }
  if (req.url !== '/v1/event_feed') return send(res, 404, '{"error":{"code":"invalid_argument","message":"no operation"}}');
  const input = JSON.parse(body.toString('utf8')) as { after?: string; limit?: number };
  const after = Number(input.after ?? 0);
  const limit = input.limit ?? 100;
  const waitSeconds = Number(/wait=(\d+)/.exec(String(req.headers.prefer ?? ''))?.[1] ?? 0);
  const headers: Record<string, string> = waitSeconds > 0 ? { 'preference-applied': `wait=${waitSeconds}`, vary: 'Prefer' } : {};
  if (ws.envelopes.length > after || waitSeconds === 0) return send(res, 200, page(ws, after, limit, input.after), headers);
  const done = () => {
    clearTimeout(timer);
    ws.waiters.delete(done);
    res.off('close', done);
    if (!res.writableEnded && !res.destroyed) send(res, 200, page(ws, after, limit, input.after), headers);
  };
  const timer = setTimeout(done, waitSeconds * 1000);
  ws.waiters.add(done);
  res.once('close', done);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => handle(req, res, Buffer.concat(chunks)));
});
server.keepAliveTimeout = 120_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
