/**
 * The reproduction of issue 18 for list_events: 8 concurrent `{"limit":500}` calls on a workspace
 * of 500 large but valid events (~63 KB each) crashed the service (`Reached heap limit`: it runs
 * with a 128 MB old space, bin/event-feed.js) while it held every row as a string and joined them.
 * The real process, on SQLite and Postgres: it must answer every call with a page of at most
 * PAGE_MAX_BYTES of envelopes and stay up; the pages then chain to every event exactly once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { PAGE_MAX_BYTES } from '../src/limits/page-bytes.ts';
import { openStore } from '../src/store/open-store.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';
import { eventsBytes, largeEvent } from './support/list-events.ts';
import { provision, startProcessServer, type ProcessServer } from './support/process-server.ts';

const EVENTS = 500;
const CONCURRENT = 8;

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`list_events on large events, the real process, ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let database: TestDatabase;
    let server: ProcessServer;
    let key: string;
    let ids: string[]; // newest first

    before(async () => {
      database = await create();
      const { workspaceId, keys } = await provision(database.url, { read: { permissions: ['read'] } });
      key = keys.read!;
      const store = openStore(database.url);
      const db = store.knex;
      try {
        for (let i = 0; i < EVENTS; i += 50) {
          await db.transaction((trx) =>
            publish(
              trx,
              workspaceId,
              Array.from({ length: 50 }, (_, j) => largeEvent(`mbx_${(i + j) % 5}`, i + j)),
            ),
          );
        }
        ids = (await db('events').select('id').where('workspace_id', workspaceId).orderBy('seq', 'desc')).map(
          (row: { id: string }) => row.id,
        );
      } finally {
        await store.close();
      }
      server = await startProcessServer({ databaseUrl: database.url, asShipped: true });
    });
    after(async () => {
      await server?.stop();
      await database?.drop();
    });

    const list = async (body: Record<string, unknown>) => {
      const response = await fetch(`${server.url}/v1/list_events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, text };
    };

    it(`${CONCURRENT} concurrent {"limit":500}: every call answered with at most PAGE_MAX_BYTES, the process still up`, async () => {
      const answers = await Promise.allSettled(Array.from({ length: CONCURRENT }, () => list({ limit: 500 })));
      assert.ok(server.alive, `the process died:\n${server.output().slice(-2000)}`);
      for (const answer of answers) {
        assert.equal(answer.status, 'fulfilled', String((answer as PromiseRejectedResult).reason));
        const { status, text } = (answer as PromiseFulfilledResult<{ status: number; text: string }>).value;
        assert.equal(status, 200, text.slice(0, 300));
        assert.ok(eventsBytes(text) <= PAGE_MAX_BYTES, `${eventsBytes(text)} bytes of events`);
        const page = JSON.parse(text);
        assert.deepEqual(
          page.events.map((e: { id: string }) => e.id),
          ids.slice(0, page.events.length),
        );
        assert.equal(typeof page.next_page_token, 'string');
      }
    });

    it('the pages chain to every event, once, newest first', async () => {
      const seen: string[] = [];
      let token: string | null = null;
      do {
        const { status, text } = await list(token === null ? { limit: 500 } : { limit: 500, page_token: token });
        assert.equal(status, 200, text.slice(0, 300));
        const page = JSON.parse(text);
        seen.push(...page.events.map((e: { id: string }) => e.id));
        token = page.next_page_token;
      } while (token !== null && seen.length <= EVENTS);
      assert.deepEqual(seen, ids);
      assert.ok(server.alive);
    });
  });
}
