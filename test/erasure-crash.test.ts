/**
 * An erasure survives a kill -9: the service runs as a child process, erases an address in small
 * batches, is SIGKILLed mid-way (some events erased, others not yet), and restarted on the same
 * database; the erasure resumes from its persisted progress once the dead instance's lease expires,
 * completes, and every event carrying the address is erased exactly as if nothing had happened.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { migrateLatest, openDatabase, publish } from '../src/library.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';
import { provision, startProcessServer, type ProcessServer } from './support/process-server.ts';

const EVENTS = 600;
const ADDRESS = 'marie.curie@exemple.fr';
const SLOW = { ERASURE_BATCH_SEQS: '10', ERASURE_PAUSE_MS: '40', ERASURE_LEASE_MS: '1500' };

async function post(base: string, path: string, key: string, body: unknown) {
  const response = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as any };
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`an erasure killed mid-way on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let database: TestDatabase | undefined;
    let server: ProcessServer | undefined;
    after(async () => {
      await server?.kill();
      await database?.drop();
    });

    it('resumes after a restart and completes', async () => {
      database = await create();
      const { workspaceId, keys } = await provision(database.url, { admin: { permissions: ['read', 'write', 'admin'] } });
      // Every third event is hers.
      const db = openDatabase(database.url);
      try {
        await migrateLatest(db);
        for (let start = 0; start < EVENTS; start += 100) {
          const batch = Array.from({ length: 100 }, (_, i) => {
            const event = sampleEvent('mbx_sales', start + i);
            if ((start + i) % 3 === 0) event.subject.person = { email: ADDRESS, name: 'Marie Curie' };
            return event;
          });
          await db.transaction((trx) => publish(trx, workspaceId, batch));
        }
      } finally {
        await db.destroy();
      }

      server = await startProcessServer({ databaseUrl: database.url, env: SLOW });
      const started = await post(server.url, '/v1/erase_person', keys.admin!, { emails: [ADDRESS] });
      assert.equal(started.status, 200, JSON.stringify(started.json));
      const id = started.json.erasure.id as string;
      // Killed once some batches are done and many are left.
      for (;;) {
        const status = await post(server.url, '/v1/erasure_status', keys.admin!, { id });
        assert.notEqual(status.json.erasure.status, 'completed', 'the erasure finished before the kill: slow it down');
        if (status.json.erasure.events_scanned >= 60) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await server.kill();

      server = await startProcessServer({ databaseUrl: database.url, env: { ...SLOW, ERASURE_PAUSE_MS: '0' } });
      const midway = await post(server.url, '/v1/erasure_status', keys.admin!, { id });
      assert.ok(midway.json.erasure.events_scanned < EVENTS, 'killed mid-way');
      let erasure: any;
      for (let i = 0; ; i++) {
        erasure = (await post(server.url, '/v1/erasure_status', keys.admin!, { id })).json.erasure;
        if (erasure.status === 'completed') break;
        assert.ok(i < 600, `the erasure did not resume: ${JSON.stringify(erasure)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal(erasure.events_scanned, EVENTS);
      assert.equal(erasure.events_erased, EVENTS / 3, 'each event erased once, none counted twice');

      const events: any[] = [];
      for (let after: string | undefined; ;) {
        const page = await post(server.url, '/v1/event_feed', keys.admin!, after ? { after, limit: 500 } : { limit: 500 });
        assert.equal(page.status, 200, JSON.stringify(page.json));
        if (page.json.events.length === 0) break;
        events.push(...page.json.events);
        after = page.json.next_cursor;
      }
      assert.equal(events.length, EVENTS);
      for (const event of events) assert.equal(contractErrors('EventEnvelope', event), null);
      assert.ok(!JSON.stringify(events).includes(ADDRESS));
      assert.equal(events.filter((e: any) => e.subject.person.email === 'erased@erased.invalid').length, EVENTS / 3);
      // Asked again: the same erasure, no work done twice.
      const again = await post(server.url, '/v1/erase_person', keys.admin!, { emails: [ADDRESS] });
      assert.equal(again.json.outcome, 'existing');
      assert.equal(again.json.erasure.id, id);
    });
  });
}
