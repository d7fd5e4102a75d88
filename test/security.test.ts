import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import pino from 'pino';
import { publish } from '../src/library.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';
import { mcpClient } from './support/mcp.ts';
import { startTestServer, type TestServer } from './support/server.ts';

/** A key's secret: all after `efk_<26-char id>_` (base64url, so it may itself hold `_`: never split on it). */
const secretOf = (key: string) => /^efk_[0-9A-Z]{26}_(.{43})$/.exec(key)![1]!;

describe('nothing secret reaches the logs or error bodies', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  let server: TestServer;
  const secret = 'a-cursor-secret-that-must-never-be-logged-0123456789';

  before(async () => {
    server = await startTestServer(await sqliteDatabase(), { EVENT_FEED_SECRET: secret }, { log: pino({ level: 'debug' }, sink) });
  });
  after(async () => {
    await server.stop().catch(() => {});
    await server.database.drop();
  });

  it('logs requests and internal errors without keys, cursors, the secret, SQL or stacks', async () => {
    const ws = await server.workspace();
    const { key } = await server.key(ws, ['read', 'write']);
    await server.post('/v1/emit_event', sampleEvent('mbx_a', 1), key);
    const page = await server.post('/v1/event_feed', {}, key);
    const cursor = page.json.next_cursor;
    await server.post('/v1/event_feed', { after: cursor }, key);
    await server.post('/v1/event_feed', { after: `${cursor}x` }, key);
    await server.post('/v1/event_feed', {}, `${key}x`);
    const client = await mcpClient(server.url, key);
    await client.callTool({ name: 'event_feed', arguments: { after: cursor } });
    await client.close();

    // An internal error: the events table disappears under the service.
    await server.db.schema.renameTable('events', 'events_gone');
    const failed = await server.post('/v1/event_feed', { after: cursor }, key);
    await server.db.schema.renameTable('events_gone', 'events');
    assert.equal(failed.status, 500);
    assert.equal(failed.json.error.code, 'internal');
    assert.match(failed.json.error.message, /^internal error; quote request id req_/);
    assert.equal(failed.json.error.request_id, failed.headers.get('x-request-id'));

    const logs = lines.join('');
    assert.match(logs, /unhandled error/, 'the internal error is logged');
    assert.match(logs, new RegExp(failed.json.error.request_id), 'with its request id');
    for (const [what, text] of [
      ['the key', key],
      ['the key secret', secretOf(key)],
      ['a cursor', cursor],
      ['the cursor secret', secret],
    ] as const) {
      assert.equal(logs.includes(text), false, `${what} appears in the logs`);
    }
    assert.doesNotMatch(logs, /select |insert into|"events_gone"|from "events"/i, 'SQL in the logs');
    assert.doesNotMatch(logs, /\n\s+at |"stack"/, 'a stack trace in the logs');
    const body = failed.text;
    assert.doesNotMatch(body, /select|events|sqlite|at /i, 'details in the error body');
  });
});

describe('property: scoping never leaks', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
  });
  after(async () => {
    await server.stop();
    await server.database.drop();
  });

  const readAll = async (key: string, limit: number) => {
    const ids: Array<{ id: string; account: string; mailbox?: string }> = [];
    let after: string | undefined;
    for (;;) {
      const page = await server.post('/v1/event_feed', after === undefined ? { limit } : { after, limit }, key);
      assert.equal(page.status, 200, page.text);
      ids.push(...page.json.events.map((e: any) => ({ id: e.id, account: e.account, mailbox: e.subject.refs.mailbox_id })));
      if (page.json.events.length < limit) return ids;
      after = page.json.next_cursor;
    }
  };

  it('a restricted feed is the full feed filtered to its mailboxes, and no workspace sees another', async () => {
    const mailbox = fc.constantFrom('mbx_a', 'mbx_b', 'mbx_c', 'mbx_d', undefined);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 1 }), mailbox), { minLength: 1, maxLength: 40 }),
        fc.uniqueArray(fc.constantFrom('mbx_a', 'mbx_b', 'mbx_c', 'mbx_d', 'mbx_none'), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 12 }),
        async (events, restriction, limit) => {
          const workspaces = [await server.workspace(), await server.workspace()];
          for (const [w, ws] of workspaces.entries()) {
            const mine = events.filter(([owner]) => owner === w).map(([, mbx], i) => sampleEvent(mbx, i));
            if (mine.length) await server.db.transaction((trx) => publish(trx, ws, mine));
          }
          for (const ws of workspaces) {
            const full = await readAll((await server.key(ws, ['read'])).key, limit);
            const restricted = await readAll((await server.key(ws, ['read'], restriction)).key, limit);
            assert.ok(
              full.every((e) => e.account === ws),
              'a workspace sees only its own events',
            );
            assert.deepEqual(
              restricted,
              full.filter((e) => e.mailbox !== undefined && (restriction as string[]).includes(e.mailbox)),
            );
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
