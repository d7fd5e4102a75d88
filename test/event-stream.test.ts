import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { until } from './support/wait.ts';

const FEED = '/v1/event_feed';

interface SseEvent {
  id?: string;
  event?: string;
  data: string;
}

/** An open stream: its SSE events as they come, parsed per the EventSource rules (fields, blank line ends an event, ':' comments). */
async function openStream(server: TestServer, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const gone = new AbortController();
  const res = await fetch(server.url + FEED, {
    method: 'POST',
    signal: gone.signal,
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let ended = false;
  const reading = (async () => {
    if (!res.body || !res.headers.get('content-type')?.startsWith('text/event-stream')) return;
    const decoder = new TextDecoder();
    let buffer = '';
    let current: SseEvent = { data: '' };
    let hasData = false;
    try {
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk, { stream: true });
        let newline: number;
        while ((newline = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line === '') {
            if (hasData) events.push(current);
            current = { data: '' };
            hasData = false;
          } else if (line.startsWith(':')) comments.push(line);
          else {
            const colon = line.indexOf(':');
            const field = line.slice(0, colon);
            const value = line.slice(colon + 1).replace(/^ /, '');
            if (field === 'data') {
              current.data += (hasData ? '\n' : '') + value;
              hasData = true;
            } else if (field === 'id') current.id = value;
            else if (field === 'event') current.event = value;
          }
        }
      }
    } catch {
      // aborted
    }
    ended = true;
  })();
  return {
    res,
    events,
    comments,
    get ended() {
      return ended;
    },
    reading,
    close: () => gone.abort(),
  };
}

async function emit(server: TestServer, key: string, mailbox: string | undefined, n = 0) {
  const res = await server.post('/v1/emit_event', sampleEvent(mailbox, n), key);
  assert.equal(res.status, 201, res.text);
  return res.json.event;
}

/** Every event of the feed as pages give them. */
async function readAll(server: TestServer, key: string): Promise<any[]> {
  const events: any[] = [];
  let cursor: string | undefined;
  for (;;) {
    const res = await server.post(FEED, cursor === undefined ? { limit: 500 } : { after: cursor, limit: 500 }, key);
    assert.equal(res.status, 200, res.text);
    if (res.json.events.length === 0) return events;
    events.push(...res.json.events);
    cursor = res.json.next_cursor;
  }
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`event_feed as Server-Sent Events on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    let ws: string;
    let readKey: string;
    let writeKey: string;
    let seeded: any[];

    before(async () => {
      server = await startTestServer(await create(), { STREAM_STALL_MS: '1500' });
      ws = await server.workspace();
      readKey = (await server.key(ws, ['read'])).key;
      writeKey = (await server.key(ws, ['write'])).key;
      const mailboxes = ['mbx_a', 'mbx_b', undefined];
      const published = await server.db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 250 }, (_, i) => sampleEvent(mailboxes[i % 3], i)),
        ),
      );
      seeded = published.map((p) => JSON.parse(p.envelope));
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    it('streams the stored events in order, each with its cursor, type and stored bytes, then new ones live', async () => {
      const stream = await openStream(server, readKey, { limit: 100 });
      assert.equal(stream.res.status, 200);
      assert.match(stream.res.headers.get('content-type') ?? '', /^text\/event-stream/);
      assert.equal(stream.res.headers.get('cache-control'), 'no-store');
      await until('the stored events came', () => stream.events.length >= 250);
      const pages = await readAll(server, readKey);
      assert.deepEqual(
        stream.events.map((e) => JSON.parse(e.data)),
        pages,
        'the same envelopes as the pages, in order',
      );
      // Unnamed messages (an EventSource's onmessage gets each one, of any type): the type is in the data.
      assert.deepEqual(
        stream.events.map((e) => e.event),
        pages.map(() => undefined),
      );
      assert.deepEqual(
        stream.events.map((e) => JSON.parse(e.data).type),
        pages.map((e) => e.type),
      );
      // Each id is the cursor right after its event: event_feed after it gives the next one.
      for (const i of [0, 99, 100, 248]) {
        const next = await server.post(FEED, { after: stream.events[i]!.id, limit: 1 }, readKey);
        assert.equal(next.json.events[0].id, pages[i + 1].id, `after the id of event ${i}`);
      }
      const emitted = await emit(server, writeKey, 'mbx_a', 1000);
      await until('the new event came live', () => stream.events.length === 251);
      assert.equal(JSON.parse(stream.events[250]!.data).id, emitted.id);
      const last = await server.post(FEED, { after: stream.events[250]!.id }, readKey);
      assert.deepEqual(last.json, { events: [], next_cursor: stream.events[250]!.id }, 'the last id is the head cursor');
      stream.close();
      await until('its slot is given back', () => server.services.heldReads.held === 0);
    });

    it('resumes after Last-Event-ID, in place of after', async () => {
      const pages = await readAll(server, readKey);
      const first = await openStream(server, readKey, {});
      await until('some events', () => first.events.length >= 10);
      first.close();
      const resumed = await openStream(
        server,
        readKey,
        { after: 'ignored-when-last-event-id-is-given' },
        { 'last-event-id': first.events[9]!.id! },
      );
      await until('the rest', () => resumed.events.length >= pages.length - 10);
      assert.deepEqual(
        resumed.events.map((e) => JSON.parse(e.data).id),
        pages.slice(10).map((e) => e.id),
      );
      resumed.close();
    });

    it("gives a restricted key only its mailboxes' events", async () => {
      const restricted = (await server.key(ws, ['read'], ['mbx_b'])).key;
      const expected = await readAll(server, restricted);
      const stream = await openStream(server, restricted, {});
      await until('its events', () => stream.events.length >= expected.length);
      assert.deepEqual(
        stream.events.map((e) => JSON.parse(e.data).id),
        expected.map((e) => e.id),
      );
      assert.ok(stream.events.every((e) => JSON.parse(e.data).subject.refs.mailbox_id === 'mbx_b'));
      await emit(server, writeKey, 'mbx_a', 2000);
      const mine = await emit(server, writeKey, 'mbx_b', 2001);
      await until('its new event', () => stream.events.length === expected.length + 1);
      assert.equal(JSON.parse(stream.events.at(-1)!.data).id, mine.id);
      stream.close();
    });

    it('answers a refused cursor like the JSON call, before streaming anything', async () => {
      for (const after of ['not-a-cursor', 'A'.repeat(600)]) {
        const json = await server.post(FEED, { after }, readKey);
        const stream = await openStream(server, readKey, { after });
        assert.equal(stream.res.status, json.status, after.slice(0, 20));
        assert.match(stream.res.headers.get('content-type') ?? '', /^application\/json/);
        assert.deepEqual(await stream.res.json(), json.json);
      }
      const viaHeader = await openStream(server, readKey, {}, { 'last-event-id': 'not-a-cursor' });
      assert.equal(viaHeader.res.status, 400);
      assert.equal((await viaHeader.res.json()).error.code, 'invalid_argument');
      const unknown = await openStream(server, readKey, { since: 'x' });
      assert.equal(unknown.res.status, 400, 'the body is validated as for the JSON call');
    });

    it('ends with an error event when a read fails once the stream has started', async () => {
      const stream = await openStream(server, readKey, {});
      await until('caught up', () => stream.events.length >= seeded.length);
      const cursor = stream.events.at(-1)!.id!;
      // Retention passing the stream's position while it waits (as for a client that read too slowly):
      // an event stored and pruned at once, behind the service's back.
      await server.db.transaction(async (trx) => {
        const [published] = await publish(trx, ws, [sampleEvent('mbx_a', 3000)]);
        const seq = (
          await trx('events')
            .where({ workspace_id: ws, id: JSON.parse(published!.envelope).id })
            .first('seq')
        ).seq;
        await trx('events').where({ workspace_id: ws }).andWhere('seq', '<=', seq).delete();
        await trx('feed_retention').insert({ workspace_id: ws, pruned_through: seq }).onConflict('workspace_id').merge();
      });
      await until('the stream ended', () => stream.ended, 10_000);
      const last = stream.events.at(-1)!;
      assert.equal(last.event, 'error');
      const json = await server.post(FEED, { after: cursor }, readKey);
      assert.equal(json.status, 400);
      assert.deepEqual(JSON.parse(last.data), json.json, 'the error body the JSON call gives');
    });

    it("counts among the key's held reads, and ends when the server shuts down", async () => {
      const other = await startTestServer(server.database, { HELD_READS_PER_KEY: '2' });
      try {
        const a = await openStream(other, readKey, {});
        const b = await openStream(other, readKey, {});
        await until('two held', () => other.services.heldReads.held === 2);
        const refused = await openStream(other, readKey, {});
        assert.equal(refused.res.status, 429);
        assert.ok(Number(refused.res.headers.get('retry-after')) >= 1);
        await other.close();
        await until('both streams ended', () => a.ended && b.ended);
      } finally {
        await other.close();
        await other.store.close();
      }
    });

    it('disconnects a client that stops reading instead of buffering the feed for it', async () => {
      // ~5 MB of events, far more than one read: a client that reads nothing gets at most one read queued.
      const bulk = await server.workspace();
      const bulkKey = (await server.key(bulk, ['read'])).key;
      await server.db.transaction((trx) =>
        publish(
          trx,
          bulk,
          Array.from({ length: 8000 }, (_, i) => sampleEvent('mbx_a', i)),
        ),
      );
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.pause(); // never reads
      const body = JSON.stringify({ limit: 500 });
      socket.write(
        `POST ${FEED} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bulkKey}\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      await until('the stream is held', () => server.services.heldReads.held === 1);
      await until('the server let the stalled client go', () => server.services.heldReads.held === 0, 15_000);
      socket.destroy();
    });
  });
}

describe('which Accept asks for a stream', () => {
  it('follows quality values: text/event-stream preferred to JSON, a named type over a wildcard', async () => {
    const { wantsEventStream } = await import('../src/http/event-stream.ts');
    const asks = (accept?: string) => wantsEventStream({ headers: accept === undefined ? {} : { accept } } as never);
    for (const accept of [
      'text/event-stream',
      'text/event-stream, */*',
      'TEXT/EVENT-STREAM',
      'text/event-stream, application/json;q=0.5',
      'application/json;q=0.9, text/event-stream',
    ])
      assert.equal(asks(accept), true, accept);
    for (const accept of [
      undefined,
      '',
      '*/*',
      'application/json',
      'application/json, text/event-stream',
      'text/event-stream;q=0',
      'text/event-stream;q=0, application/json',
      'text/event-stream;q=0.5, */*',
    ])
      assert.equal(asks(accept), false, String(accept));
  });
});
