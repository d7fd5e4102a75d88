/**
 * The floor of ingestion on Postgres: a bare node:http server that answers POST /v1/emit_event by
 * inserting the event and nothing else: no key check beyond a lookup, no validation, no feed
 * counter (each workspace's seqs come from this process's memory, which only a single writer may
 * do), no webhook outbox, no notification. Emits are batched like the service's group commit
 * (those arriving in one turn of the event loop share a statement, two statements in flight, at
 * most 256 events each), and each batch is one INSERT into a copy of the events table with the
 * same indexes and foreign key, dropped on exit. What it reaches into one workspace and into 100
 * is what the insert alone allows this machine: a correct append does that and more.
 * argv[2]: JSON { databaseUrl, workspaceOfKey: { key: workspaceId } }; prints the port on stdout
 * once listening.
 */
import { createServer, type ServerResponse } from 'node:http';
import pg from 'pg';
import type { EmitEventRequest } from '../generated/types.ts';
import { GROUP_COMMIT_MAX_EVENTS } from '../src/feed/group-commit.ts';
import { prepareEvent } from '../src/feed/publish.ts';
import type { NewEvent } from '../src/store/port.ts';
import { postgresAdapter } from '../src/store/postgres/adapter.ts';

const { databaseUrl, workspaceOfKey } = JSON.parse(process.argv[2]!) as { databaseUrl: string; workspaceOfKey: Record<string, string> };
// As many statements in flight as the service's Postgres store allows.
const probe = postgresAdapter(databaseUrl);
const TRANSACTIONS_IN_FLIGHT = probe.appends.concurrent;
await probe.close();
const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
await pool.query('DROP TABLE IF EXISTS ingest_floor_events');
await pool.query('CREATE TABLE ingest_floor_events (LIKE events INCLUDING ALL)');
await pool.query('ALTER TABLE ingest_floor_events ADD FOREIGN KEY (workspace_id) REFERENCES workspaces (id)');

const INSERT = `INSERT INTO ingest_floor_events (workspace_id, seq, id, type, mailbox_id, occurred_at_ms, stored_at, envelope)
  SELECT r.workspace_id, r.seq, r.id, r.type, r.mailbox_id, r.occurred_at_ms, $1::bigint, r.envelope
    FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
         AS r(workspace_id, seq, id, type, mailbox_id, occurred_at_ms, envelope)`;

interface Pending {
  workspaceId: string;
  event: NewEvent;
  res: ServerResponse;
}
const lastSeq = new Map<string, number>();
let waiting: Pending[] = [];
let inFlight = 0;
let scheduled = false;

function kick(): void {
  if (scheduled || inFlight >= TRANSACTIONS_IN_FLIGHT || waiting.length === 0) return;
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    const batch = waiting.splice(0, GROUP_COMMIT_MAX_EVENTS);
    inFlight++;
    void insert(batch).finally(() => {
      inFlight--;
      kick();
    });
  });
}

async function insert(batch: Pending[]): Promise<void> {
  // Grouped by workspace, in arrival order within one, as the service's append is.
  const sorted = [...batch].sort((a, b) => (a.workspaceId < b.workspaceId ? -1 : a.workspaceId > b.workspaceId ? 1 : 0));
  const columns: unknown[][] = [[], [], [], [], [], [], []];
  for (const { workspaceId, event } of sorted) {
    const seq = (lastSeq.get(workspaceId) ?? 0) + 1;
    lastSeq.set(workspaceId, seq);
    [workspaceId, seq, event.id, event.type, event.mailboxId, event.occurredAtMs, event.envelope].forEach((value, i) =>
      columns[i]!.push(value),
    );
  }
  try {
    await pool.query({ name: 'ingest_floor_insert', text: INSERT, values: [Date.now(), ...columns] });
    for (const { event, res } of batch) send(res, 201, event.envelope);
  } catch (err) {
    for (const { res } of batch) send(res, 500, JSON.stringify({ error: String(err) }));
  }
}

function send(res: ServerResponse, status: number, text: string): void {
  const body = Buffer.from(text);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
  res.end(body);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const workspaceId = workspaceOfKey[(req.headers.authorization ?? '').slice('Bearer '.length)];
    if (!workspaceId) return send(res, 401, '{}');
    const input = JSON.parse(Buffer.concat(chunks).toString('utf8')) as EmitEventRequest;
    // The envelope as the service builds it: every correct server writes this text.
    waiting.push({ workspaceId, event: prepareEvent(workspaceId, input, new Date()), res });
    kick();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
process.on('SIGTERM', () =>
  server.close(
    () =>
      void pool
        .query('DROP TABLE ingest_floor_events')
        .then(() => pool.end())
        .then(() => process.exit(0)),
  ),
);
