/**
 * The port's rows are plain data (issue 33): the store decodes its columns' encodings, so nothing
 * above it parses a key's comma-separated permissions or JSON mailboxes, or turns SQLite's 0/1
 * into a boolean. What is stored stays as it was (existing databases are read as they are).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Knex } from 'knex';
import { newKeyId } from '../src/base/ids.ts';
import type { OpenedStore } from '../src/store/open-store.ts';
import type { EndpointRow } from '../src/store/port.ts';
import { databaseKinds } from './support/databases.ts';
import { suiteDatabase } from './support/suite-database.ts';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`the store's rows, decoded (${kind})`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let store: OpenedStore;
    let db: Knex;
    suiteDatabase(create, (opened) => {
      store = opened;
      db = opened.knex;
    });

    it("gives a key's permissions and mailboxes as lists, and stores them as before (comma-separated, JSON)", async () => {
      const workspace = await store.createWorkspace('rows', true, Date.now());
      const id = newKeyId();
      await store.keys.insert({
        id,
        workspace_id: workspace.id,
        secret_sha256: '00'.repeat(32),
        permissions: ['read', 'admin'],
        mailboxes: ['mbx_a', 'mbx_b'],
        label: null,
        created_at: Date.now(),
      });
      const every = newKeyId();
      await store.keys.insert({
        id: every,
        workspace_id: workspace.id,
        secret_sha256: '00'.repeat(32),
        permissions: ['write'],
        mailboxes: null,
        label: 'all',
        created_at: Date.now(),
      });

      assert.deepEqual(await db('api_keys').select('permissions', 'mailboxes').where({ id }).first(), {
        permissions: 'read,admin',
        mailboxes: '["mbx_a","mbx_b"]',
      });
      const byId = await store.keys.byId(id);
      assert.deepEqual(
        [byId?.permissions, byId?.mailboxes],
        [
          ['read', 'admin'],
          ['mbx_a', 'mbx_b'],
        ],
      );
      const listed = await store.keys.list(workspace.id);
      assert.deepEqual(
        listed.map((key) => [key.id, key.permissions, key.mailboxes]),
        [
          [id, ['read', 'admin'], ['mbx_a', 'mbx_b']],
          [every, ['write'], null],
        ],
      );
      assert.deepEqual((await store.keys.find(workspace.id, every))?.permissions, ['write']);
      assert.deepEqual(
        (await store.keys.after(workspace.id, { includeRevoked: true, limit: 10 })).map((key) => key.mailboxes),
        [['mbx_a', 'mbx_b'], null],
      );
      assert.deepEqual((await store.write((tx) => tx.findKey(workspace.id, id)))?.permissions, ['read', 'admin']);
    });

    it('leaves out a permission this service does not know', async () => {
      const workspace = await store.createWorkspace('rows-unknown', true, Date.now());
      const id = newKeyId();
      await db('api_keys').insert({
        id,
        workspace_id: workspace.id,
        secret_sha256: '00'.repeat(32),
        permissions: 'read,root',
        mailboxes: null,
        created_at: Date.now(),
      });
      assert.deepEqual((await store.keys.byId(id))?.permissions, ['read']);
    });

    it("gives an endpoint's `enabled` as a boolean, however the column holds it", async () => {
      const workspace = await store.createWorkspace('rows-hooks', true, Date.now());
      const now = Date.now();
      const endpoint = (id: string, enabled: boolean): EndpointRow => ({
        id,
        workspace_id: workspace.id,
        url: `https://example.com/${id}`,
        event_types: '[]',
        enabled,
        disabled_reason: null,
        disabled_at: null,
        secret: 'whsec_AAAA',
        previous_secret: null,
        previous_secret_expires_at: null,
        last_tested_at: null,
        created_at: now,
        updated_at: now,
      });
      await store.write(async (tx) => {
        await tx.insertEndpoint(endpoint(`whe_on_${kind}`, true));
        await tx.insertEndpoint(endpoint(`whe_off_${kind}`, false));
      });
      assert.deepEqual(
        (await store.webhooks.listEndpoints(workspace.id)).map((row) => [row.id, row.enabled]),
        [
          [`whe_off_${kind}`, false],
          [`whe_on_${kind}`, true],
        ],
      );
      assert.equal((await store.webhooks.findEndpoint(workspace.id, `https://example.com/whe_off_${kind}`))?.enabled, false);
      assert.equal((await store.write((tx) => tx.findEndpoint(workspace.id, `https://example.com/whe_on_${kind}`)))?.enabled, true);
      await store.write((tx) => tx.queueDeliveries(`whe_on_${kind}`, workspace.id, [{ seq: 1, id: 'evt_rows' }], now));
      const leased = await store.webhooks.leaseEndpoints({ owner: 'rows', now: now + 1, leaseMs: 1000, max: 10, perWorkspace: 10 });
      assert.deepEqual(
        leased.filter((row) => row.workspace_id === workspace.id).map((row) => [row.id, row.enabled]),
        [[`whe_on_${kind}`, true]],
      );
    });
  });
}
