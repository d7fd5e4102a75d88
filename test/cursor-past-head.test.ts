/**
 * A cursor past the head of its feed is refused, never answered "nothing new" (feed/expiry.ts,
 * assertCursorNotPastHead). It happens when the database lost commits it had acknowledged: a
 * failover to an asynchronous replica that had not received them, a restore from a backup. Here the
 * service is stopped, its database loses its last five events as such a copy would (their rows and
 * the counter's increment), and the service starts on it again, as after a failover.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../src/store/open-store.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';
import { provision, startProcessServer, type ProcessServer } from './support/process-server.ts';

const PAST_THE_END = /after is past the end of this feed/;

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`a cursor past the head after the database lost its last commits (${kind})`, { skip }, () => {
    let database: TestDatabase;
    let server: ProcessServer;
    let workspaceId: string;
    let keys: Record<string, string>;
    let atFive: string;
    let atTen: string;

    const post = async (path: string, key: string, body: unknown) => {
      const res = await fetch(server.url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    const mcpFeed = async (key: string, args: unknown) => {
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'event_feed', arguments: args } }),
      });
      return ((await res.json()) as any).result;
    };

    before(async () => {
      database = await create();
      ({ workspaceId, keys } = await provision(database.url, {
        read: { permissions: ['read'] },
        restricted: { permissions: ['read'], mailboxes: ['mbx_a'] },
        write: { permissions: ['write'] },
      }));
      server = await startProcessServer({ databaseUrl: database.url });
      for (let n = 0; n < 10; n++) assert.equal((await post('/v1/emit_event', keys.write!, sampleEvent('mbx_a', n))).status, 201);
      atFive = (await post('/v1/event_feed', keys.read!, { limit: 5 })).json.next_cursor;
      atTen = (await post('/v1/event_feed', keys.read!, { after: atFive })).json.next_cursor;
      await server.stop();

      // The copy the service comes back on had received five events only.
      const store = openStore(database.url);
      try {
        await store.knex('events').where({ workspace_id: workspaceId }).andWhere('seq', '>', 5).delete();
        await store.knex('feed_counters').where({ workspace_id: workspaceId }).update({ last_seq: 5 });
      } finally {
        await store.close();
      }
      server = await startProcessServer({ databaseUrl: database.url });
    });
    after(async () => {
      await server?.kill();
      await database?.drop();
    });

    it('is refused with invalid_argument, over HTTP and MCP, for whole-feed and restricted keys', async () => {
      for (const key of [keys.read!, keys.restricted!]) {
        const { status, json } = await post('/v1/event_feed', key, { after: atTen });
        assert.equal(status, 400, JSON.stringify(json));
        assert.equal(json.error.code, 'invalid_argument');
        assert.match(json.error.message, PAST_THE_END);
      }
      const result = await mcpFeed(keys.read!, { after: atTen });
      assert.equal(result.isError, true);
      assert.match(JSON.stringify(result), PAST_THE_END);
    });

    it('a cursor at the head it still holds is "nothing new", as always', async () => {
      const { status, json } = await post('/v1/event_feed', keys.read!, { after: atFive });
      assert.equal(status, 200);
      assert.deepEqual(json.events, []);
      assert.equal(json.next_cursor, atFive);
    });

    it('stays refused while new events fill the lost positions below it, whichever way the server knows its head', async () => {
      const emitted: string[] = [];
      for (let n = 0; n < 3; n++) emitted.push((await post('/v1/emit_event', keys.write!, sampleEvent('mbx_a', 100 + n))).json.event.id);
      // The head is now known from this process's own commits: refused without reading storage.
      const refused = await post('/v1/event_feed', keys.read!, { after: atTen });
      assert.equal(refused.status, 400, JSON.stringify(refused.json));
      assert.match(refused.json.error.message, PAST_THE_END);
      // Whoever holds a cursor the database still has reads the new events.
      const { json } = await post('/v1/event_feed', keys.read!, { after: atFive });
      assert.deepEqual(
        json.events.map((event: { id: string }) => event.id),
        emitted,
      );
    });
  });
}
