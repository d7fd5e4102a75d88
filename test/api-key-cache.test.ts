/**
 * Verified keys are kept briefly on Postgres (bench/README.md): a revocation through this process
 * refuses the key at once; one made elsewhere (another instance, the CLI) within VERIFIED_KEY_TTL_MS.
 * On SQLite nothing is kept: a revocation by another process takes effect at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { authenticate, createKey, revokeKey, VERIFIED_KEY_TTL_MS } from '../src/auth/api-keys.ts';
import { openDatabase, type Db } from '../src/store/db.ts';
import { migrateLatest } from '../src/store/migrate.ts';
import { createWorkspace } from '../src/store/workspaces.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`API key lookups and revocation (${kind})`, { skip }, () => {
    let database: TestDatabase;
    // Two pools on one database: this instance, and "another instance" that writes behind its back.
    let here: Db;
    let elsewhere: Db;
    let workspaceId: string;

    before(async () => {
      database = await create();
      here = openDatabase(database.url);
      elsewhere = openDatabase(database.url);
      await migrateLatest(here);
      workspaceId = (await createWorkspace(here, 'Keys', true, Date.now())).id;
    });
    after(async () => {
      await here?.destroy();
      await elsewhere?.destroy();
      await database?.drop();
    });

    const newKey = () => createKey(here, { workspaceId, permissions: ['read'], mailboxes: null }, Date.now());

    it('revokeKey in this process refuses the key at once, even right after it was verified', async () => {
      const { id, key } = await newKey();
      assert.equal((await authenticate(here, key))?.keyId, id);
      assert.equal((await authenticate(here, key))?.keyId, id);
      assert.equal(await revokeKey(here, id, Date.now()), true);
      assert.equal(await authenticate(here, key), undefined);
    });

    it('a wrong secret for a verified key id is refused', async () => {
      const { id, key } = await newKey();
      assert.equal((await authenticate(here, key))?.keyId, id);
      const wrong = `${key.slice(0, -4)}${key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
      assert.equal(await authenticate(here, wrong), undefined);
    });

    it(`a revocation made elsewhere is effective ${kind === 'postgres' ? `within ${VERIFIED_KEY_TTL_MS} ms` : 'at once'}`, async () => {
      const { id, key } = await newKey();
      assert.equal((await authenticate(here, key))?.keyId, id);
      const revokedAt = performance.now();
      // What the CLI or another instance does: the row changes, this process's memory does not.
      await elsewhere('api_keys').where({ id }).update({ revoked_at: Date.now() });
      if (kind === 'sqlite') {
        assert.equal(await authenticate(here, key), undefined);
        return;
      }
      while ((await authenticate(here, key)) !== undefined) {
        assert.ok(performance.now() - revokedAt <= VERIFIED_KEY_TTL_MS + 250, 'still accepted past the bound');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(performance.now() - revokedAt <= VERIFIED_KEY_TTL_MS + 250);
    });

    it('a key created elsewhere works at once (unknown keys are never kept)', async () => {
      const bogus = `efk_01M6DMBE00KKNS70D02MHHS0KA_${'A'.repeat(43)}`;
      assert.equal(await authenticate(here, bogus), undefined);
      const { id, key } = await createKey(elsewhere, { workspaceId, permissions: ['read'], mailboxes: null }, Date.now());
      assert.equal((await authenticate(here, key))?.keyId, id);
    });
  });
}
