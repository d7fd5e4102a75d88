/**
 * Verified keys are kept on Postgres (auth/verified-keys.ts): a revocation through this process
 * refuses the key at once; one made elsewhere (another instance, the CLI, SQL) as soon as the key
 * channel tells of it, or within VERIFIED_KEY_TTL_MS when there is no channel.
 * On SQLite keys are kept only while no other process has written to the file (PRAGMA
 * data_version of the writing connection): a revocation by another process takes effect at once.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { authenticate as authenticateKey, createKey, revokeKey } from '../src/auth/api-keys.ts';
import { HEARD_KEY_TTL_MS, VERIFIED_KEY_TTL_MS, VerifiedKeys } from '../src/auth/verified-keys.ts';
import type { Principal } from '../src/auth/principal.ts';
import type { ChangeWatch } from '../src/feed/change-watch.ts';
import { ChannelTrust } from '../src/changes/channel-trust.ts';
import { watchChanges } from '../src/app/services.ts';
import { createLogger } from '../src/base/log.ts';
import { HEAD_LISTENER_NAME, listenForChanges } from '../src/store/postgres/changes.ts';
import type { ChangeListener as HeadListener } from '../src/store/port.ts';
import { databaseKinds, postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';
import { sqliteReadsDuring } from './support/checkouts.ts';
import { until } from './support/wait.ts';
import { openStore, type OpenedStore } from '../src/store/open-store.ts';

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`API key lookups and revocation (${kind})`, { skip }, () => {
    let database: TestDatabase;
    // Two pools on one database: this instance (with the verified keys a service keeps), and
    // "another instance" that writes behind its back.
    let here: OpenedStore;
    let changes: ChangeWatch;
    let elsewhere: OpenedStore;
    let workspaceId: string;
    const authenticate = (db: OpenedStore, key: string) => authenticateKey(db, key, changes.keys);

    before(async () => {
      database = await create();
      here = openStore(database.url);
      changes = watchChanges(here);
      elsewhere = openStore(database.url);
      await here.migrate();
      workspaceId = (await here.createWorkspace('Keys', true, Date.now())).id;
    });
    after(async () => {
      await here?.close();
      await elsewhere?.close();
      await database?.drop();
    });

    const newKey = () => createKey(here, { workspaceId, permissions: ['read'], mailboxes: null }, Date.now());

    it('revokeKey in this process refuses the key at once, even right after it was verified', async () => {
      const { id, key } = await newKey();
      assert.equal((await authenticate(here, key))?.keyId, id);
      assert.equal((await authenticate(here, key))?.keyId, id);
      assert.equal(await revokeKey(here, id, Date.now(), changes.keys), true);
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
      await elsewhere.knex('api_keys').where({ id }).update({ revoked_at: Date.now() });
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

    const sqliteOnly = { skip: kind !== 'sqlite' && 'SQLite only (Postgres: the key channel, below)' };
    const lookupsDuring = (work: () => Promise<unknown>) => sqliteReadsDuring(here.knex, /FROM api_keys/, work);

    it('SQLite: a verified key is not read again while nothing else wrote, and is again once something did', sqliteOnly, async () => {
      const { id, key } = await newKey();
      assert.equal(await lookupsDuring(async () => assert.equal((await authenticate(here, key))?.keyId, id)), 1);
      // Writes of this process (a workspace, a key) do not count: they cannot revoke behind its back.
      await here.createWorkspace('Another', false, Date.now());
      assert.equal(await lookupsDuring(async () => assert.equal((await authenticate(here, key))?.keyId, id)), 0);
      await elsewhere.createWorkspace('Written by another process', false, Date.now());
      assert.equal(await lookupsDuring(async () => assert.equal((await authenticate(here, key))?.keyId, id)), 1);
    });

    it(
      'SQLite: while a transaction of this process holds a snapshot, the key is read: a revocation elsewhere is refused at once',
      sqliteOnly,
      async () => {
        const { id, key } = await newKey();
        assert.equal((await authenticate(here, key))?.keyId, id);
        await here.knex.transaction(async (trx) => {
          await trx('workspaces').count({ n: '*' }); // the writing connection now reads a snapshot
          await elsewhere.knex('api_keys').where({ id }).update({ revoked_at: Date.now() });
          assert.equal(await authenticate(here, key), undefined);
        });
        assert.equal(await authenticate(here, key), undefined);
      },
    );
  });
}

describe('VerifiedKeys: how long a verified key may be believed', () => {
  const principal = { keyId: 'key_a', workspaceId: 'ws', permissions: new Set(['read']), mailboxes: null } as Principal;
  const hash = Buffer.alloc(32);
  const clock = () => {
    let t = 1000;
    return { now: () => t, advance: (ms: number) => (t += ms) };
  };

  it('without a channel, VERIFIED_KEY_TTL_MS; with one, HEARD_KEY_TTL_MS', () => {
    const time = clock();
    const trust = new ChannelTrust();
    const keys = new VerifiedKeys(trust, time.now);
    keys.keep('key_a', principal, hash, keys.mark());
    time.advance(VERIFIED_KEY_TTL_MS);
    assert.ok(keys.lookup('key_a'));
    time.advance(1);
    assert.equal(keys.lookup('key_a'), undefined);
    trust.open();
    keys.keep('key_a', principal, hash, keys.mark());
    time.advance(HEARD_KEY_TTL_MS);
    assert.ok(keys.lookup('key_a'));
    time.advance(1);
    assert.equal(keys.lookup('key_a'), undefined);
  });

  it('a lookup begun before the channel opened, or across a loss, is not kept long', () => {
    const time = clock();
    const trust = new ChannelTrust();
    const keys = new VerifiedKeys(trust, time.now);
    let mark = keys.mark();
    trust.open();
    keys.keep('key_a', principal, hash, mark);
    time.advance(VERIFIED_KEY_TTL_MS + 1);
    assert.equal(keys.lookup('key_a'), undefined, 'begun before the open');
    mark = keys.mark();
    trust.lose();
    trust.open();
    keys.keep('key_a', principal, hash, mark);
    time.advance(VERIFIED_KEY_TTL_MS + 1);
    assert.equal(keys.lookup('key_a'), undefined, 'the channel was lost meanwhile');
  });

  it('a loss cuts the trust of what was kept while the channel was up', () => {
    const time = clock();
    const trust = new ChannelTrust();
    const keys = new VerifiedKeys(trust, time.now);
    trust.open();
    keys.keep('key_a', principal, hash, keys.mark());
    time.advance(VERIFIED_KEY_TTL_MS + 1);
    assert.ok(keys.lookup('key_a'));
    trust.lose();
    assert.equal(keys.lookup('key_a'), undefined);
  });

  it('a lookup that overlapped a revocation is not kept (its row may predate it)', () => {
    const trust = new ChannelTrust();
    const keys = new VerifiedKeys(trust, clock().now);
    trust.open();
    const mark = keys.mark();
    keys.forget('key_a'); // heard while the lookup's query was on its way
    keys.keep('key_a', principal, hash, mark);
    assert.equal(keys.lookup('key_a'), undefined);
  });
});

describe(
  'API keys with the key channel (postgres)',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
    let database: TestDatabase;
    let here: OpenedStore;
    let elsewhere: OpenedStore;
    let listener: HeadListener;
    let changes: ChangeWatch;
    let workspaceId: string;
    let lookups = 0;
    const authenticate = (db: OpenedStore, key: string) => authenticateKey(db, key, changes.keys);

    before(async () => {
      database = await postgresDatabase();
      here = openStore(database.url);
      elsewhere = openStore(database.url);
      await here.migrate();
      workspaceId = (await here.createWorkspace('Keys', true, Date.now())).id;
      here.knex.on('query', (query: { sql: string }) => {
        if (/FROM api_keys WHERE id/.test(query.sql)) lookups++;
      });
      changes = watchChanges(here);
      listener = listenForChanges(database.url, changes, createLogger('silent'));
      await until('the channel opens', () => changes.live);
    });
    after(async () => {
      await listener?.stop();
      await here?.close();
      await elsewhere?.close();
      await database?.drop();
    });

    const newKey = () => createKey(here, { workspaceId, permissions: ['read'], mailboxes: null }, Date.now());
    const lookupsDuring = async (work: () => Promise<unknown>) => {
      const before = lookups;
      await work();
      return lookups - before;
    };

    it('keeps a verified key past VERIFIED_KEY_TTL_MS while the channel is up: no lookup', async () => {
      const { id, key } = await newKey();
      assert.equal(await lookupsDuring(() => authenticate(here, key)), 1);
      await sleep(VERIFIED_KEY_TTL_MS + 200);
      assert.equal(await lookupsDuring(async () => assert.equal((await authenticate(here, key))?.keyId, id)), 0);
    });

    for (const [how, change] of [
      ['revoked by SQL', (id: string) => elsewhere.knex('api_keys').where({ id }).update({ revoked_at: Date.now() })],
      ['revoked by another process', (id: string) => revokeKey(elsewhere, id, Date.now())],
      ['deleted', (id: string) => elsewhere.knex('api_keys').where({ id }).delete()],
    ] as const) {
      it(`a key ${how} elsewhere is refused as soon as that is heard, long before any expiry`, async () => {
        const { id, key } = await newKey();
        assert.equal((await authenticate(here, key))?.keyId, id);
        assert.equal(await lookupsDuring(() => authenticate(here, key)), 0, 'kept');
        const changedAt = performance.now();
        await change(id);
        await until('refused', async () => (await authenticate(here, key)) === undefined, 2000);
        assert.ok(performance.now() - changedAt < VERIFIED_KEY_TTL_MS / 2, `heard after ${performance.now() - changedAt} ms`);
      });
    }

    it('a lost channel brings back the short expiry, and then the long one once it is back', async () => {
      const { id, key } = await newKey();
      await authenticate(here, key);
      await sleep(VERIFIED_KEY_TTL_MS + 200);
      assert.equal(await lookupsDuring(() => authenticate(here, key)), 0, 'kept while the channel was up');
      await here.knex.raw(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ? AND datname = current_database()',
        [HEAD_LISTENER_NAME],
      );
      await until('lost', () => !changes.live);
      assert.equal(await lookupsDuring(async () => assert.equal((await authenticate(here, key))?.keyId, id)), 1, 'looked up again');
      await until('back', () => changes.live, 15_000);
      await sleep(VERIFIED_KEY_TTL_MS + 50); // what was kept while it was down expires as it was kept
      assert.equal(await lookupsDuring(() => authenticate(here, key)), 1);
      await sleep(VERIFIED_KEY_TTL_MS + 200);
      assert.equal(await lookupsDuring(() => authenticate(here, key)), 0, 'kept long again');
    });
  },
);
