import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { databaseKinds } from './support/databases.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { startTestServer, type TestServer } from './support/server.ts';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`smoke on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(await create());
    });
    after(async () => {
      await server.stop();
      await server.database.drop();
    });

    it('emits an event and reads it back by cursor', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const first = await server.post('/v1/event_feed', {}, key);
      assert.equal(first.status, 200);
      assert.deepEqual(first.json.events, []);
      const emitted = await server.post('/v1/emit_event', sampleEvent(), key);
      assert.equal(emitted.status, 201, emitted.text);
      assert.equal(contractErrors('EmitEventResponse', emitted.json), null);
      const page = await server.post('/v1/event_feed', { after: first.json.next_cursor }, key);
      assert.equal(page.status, 200);
      assert.equal(contractErrors('EventFeedResponse', page.json), null);
      assert.deepEqual(page.json.events, [emitted.json.event]);
    });
  });
}
