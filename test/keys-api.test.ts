/**
 * create_key, list_keys and revoke_key: keys managed through the API by an admin key, never with
 * more rights than the caller, never showing a secret but the new key's, bounded per workspace.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { MAX_ACTIVE_KEYS_PER_WORKSPACE } from '../src/operations/create-key.ts';
import { LIST_KEYS_SCAN_BUDGET } from '../src/operations/list-keys.ts';
import { newKeyId } from '../src/base/ids.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const SECRET_PART = (key: string) => key.slice('efk_'.length + 26 + 1);

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`keys through the API on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let database: TestDatabase;
    let server: TestServer;
    let ws: string;
    let admin: string;
    // Everything the server logs, at its most verbose: no secret may be in it.
    const logged: string[] = [];
    const secretsShown: string[] = [];

    before(async () => {
      database = await create();
      server = await startTestServer(database, {}, { log: pino({ level: 'trace' }, { write: (line: string) => void logged.push(line) }) });
      ws = await server.workspace();
      ({ key: admin } = await server.key(ws, ['read', 'write', 'admin']));
    });
    after(async () => {
      await server?.stop();
      await database?.drop();
    });

    const call = (operation: string, body: unknown, key: string) => server.post(`/v1/${operation}`, body, key);
    const createKey = async (body: unknown, key = admin) => {
      const response = await call('create_key', body, key);
      assert.equal(response.status, 201, response.text);
      assert.equal(contractErrors('CreateKeyResponse', response.json), null);
      secretsShown.push(SECRET_PART(response.json.key));
      return response.json as { api_key: any; key: string };
    };
    const listAll = async (key: string, body: Record<string, unknown> = {}) => {
      const keys: any[] = [];
      let token: string | null | undefined;
      let pages = 0;
      do {
        const response = await call('list_keys', token ? { ...body, page_token: token } : body, key);
        assert.equal(response.status, 200, response.text);
        assert.equal(contractErrors('ListKeysResponse', response.json), null);
        keys.push(...response.json.keys);
        token = response.json.next_page_token;
        assert.ok(++pages < 1000, 'paging ends');
      } while (token);
      return keys;
    };

    it('create_key answers 201 with the key once; it works with exactly its permissions', async () => {
      const created = await createKey({ permissions: ['read'], label: 'QA conformance kit' });
      assert.match(created.key, /^efk_[0-9A-HJKMNP-TV-Z]{26}_[A-Za-z0-9_-]{43}$/);
      assert.equal(created.api_key.id, `key_${created.key.slice(4, 30)}`);
      assert.deepEqual(
        { ...created.api_key, id: undefined, created_at: undefined },
        {
          id: undefined,
          workspace_id: ws,
          permissions: ['read'],
          mailboxes: null,
          label: 'QA conformance kit',
          created_at: undefined,
          revoked_at: null,
        },
      );
      assert.equal((await call('event_feed', {}, created.key)).status, 200);
      const emit = await call('emit_event', sampleEvent('mbx_sales', 1), created.key);
      assert.equal(emit.status, 403, emit.text);

      const row = await server.db('api_keys').where({ id: created.api_key.id }).first();
      assert.ok(!JSON.stringify(row).includes(SECRET_PART(created.key)), 'only a hash is stored');
    });

    it('list_keys never shows a secret; revoked keys only on demand', async () => {
      const created = await createKey({ permissions: ['read', 'write'] });
      const response = await call('list_keys', {}, admin);
      assert.equal(response.status, 200, response.text);
      assert.ok(!response.text.includes(SECRET_PART(created.key)));
      assert.ok(!response.text.includes(SECRET_PART(admin)));
      assert.ok(!/efk_|secret/.test(response.text), response.text);
      const listed = response.json.keys.find((k: any) => k.id === created.api_key.id);
      assert.deepEqual(listed, created.api_key);

      assert.equal((await call('revoke_key', { id: created.api_key.id }, admin)).status, 200);
      assert.ok(!(await listAll(admin)).some((k) => k.id === created.api_key.id));
      const withRevoked = (await listAll(admin, { include_revoked: true })).find((k) => k.id === created.api_key.id);
      assert.match(withRevoked.revoked_at, /^\d{4}-\d\d-\d\dT/);
    });

    it('a key never creates a key with rights it does not have', async () => {
      const { key: readAdmin } = await server.key(ws, ['read', 'admin']);
      const before = await server.db('api_keys').count({ n: '*' }).first();
      const refused = await call('create_key', { permissions: ['read', 'write'] }, readAdmin);
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.json.error.code, 'forbidden');
      assert.match(refused.json.error.message, /lacks "write"/);
      assert.deepEqual(await server.db('api_keys').count({ n: '*' }).first(), before, 'nothing created');
      assert.deepEqual((await createKey({ permissions: ['read'] }, readAdmin)).api_key.permissions, ['read']);
    });

    it('a restricted admin key creates only keys restricted within its own mailboxes', async () => {
      const { key: restricted } = await server.key(ws, ['read', 'admin'], ['mbx_a', 'mbx_b']);
      const unrestricted = await call('create_key', { permissions: ['read'] }, restricted);
      assert.equal(unrestricted.status, 403, unrestricted.text);
      assert.match(unrestricted.json.error.message, /pass "mailboxes"/);
      const outside = await call('create_key', { permissions: ['read'], mailboxes: ['mbx_a', 'mbx_c'] }, restricted);
      assert.equal(outside.status, 403, outside.text);
      assert.match(outside.json.error.message, /mbx_c/);
      const empty = await call('create_key', { permissions: ['read'], mailboxes: [] }, restricted);
      assert.equal(empty.status, 400, empty.text);

      const created = await createKey({ permissions: ['read'], mailboxes: ['mbx_b'] }, restricted);
      assert.deepEqual(created.api_key.mailboxes, ['mbx_b']);
      const page = await call('event_feed', {}, created.key);
      assert.equal(page.status, 200, page.text);
    });

    it('a restricted admin key lists and revokes only keys within its mailboxes, itself included', async () => {
      const { id: selfId, key: restricted } = await server.key(ws, ['read', 'admin'], ['mbx_x', 'mbx_y']);
      const inside = await createKey({ permissions: ['read'], mailboxes: ['mbx_y'] }, restricted);
      const { id: otherMailboxId } = await server.key(ws, ['read'], ['mbx_y', 'mbx_z']);
      const { id: everywhereId } = await server.key(ws, ['read']);

      const seen = (await listAll(restricted)).map((k) => k.id);
      assert.deepEqual(seen.sort(), [selfId, inside.api_key.id].sort());
      const seenByAdmin = (await listAll(admin)).map((k) => k.id);
      for (const id of [selfId, inside.api_key.id, otherMailboxId, everywhereId]) assert.ok(seenByAdmin.includes(id));

      for (const id of [otherMailboxId, everywhereId]) {
        const refused = await call('revoke_key', { id }, restricted);
        assert.equal(refused.status, 403, refused.text);
        assert.equal(refused.json.error.code, 'forbidden');
      }
      const revoked = await call('revoke_key', { id: inside.api_key.id }, restricted);
      assert.equal(revoked.status, 200, revoked.text);
      assert.equal(revoked.json.outcome, 'revoked');
      assert.equal((await call('event_feed', {}, inside.key)).status, 401);
    });

    it('revoke_key: refused at once, idempotent, unknown or foreign ids refused alike, a key may revoke itself', async () => {
      const created = await createKey({ permissions: ['read'] });
      assert.equal((await call('event_feed', {}, created.key)).status, 200, 'verified (and kept) before the revocation');
      const revoked = await call('revoke_key', { id: created.api_key.id }, admin);
      assert.equal(revoked.status, 200, revoked.text);
      assert.equal(contractErrors('RevokeKeyResponse', revoked.json), null);
      assert.equal(revoked.json.outcome, 'revoked');
      assert.match(revoked.json.api_key.revoked_at, /^\d{4}-/);
      assert.ok(!revoked.text.includes('efk_'));
      const refused = await call('event_feed', {}, created.key);
      assert.equal(refused.status, 401, refused.text);
      assert.equal(refused.json.error.code, 'unauthorized');

      const again = await call('revoke_key', { id: created.api_key.id }, admin);
      assert.equal(again.status, 200, again.text);
      assert.equal(again.json.outcome, 'already_revoked');
      assert.equal(again.json.api_key.revoked_at, revoked.json.api_key.revoked_at);

      const otherWs = await server.workspace({ name: 'Other' });
      const { id: foreignId, key: foreignKey } = await server.key(otherWs, ['read']);
      const unknownId = newKeyId();
      for (const id of [unknownId, foreignId]) {
        const response = await call('revoke_key', { id }, admin);
        assert.equal(response.status, 400, response.text);
        assert.deepEqual(response.json, { error: { code: 'invalid_argument', message: `no key ${id} in this workspace` } });
      }
      assert.equal((await call('event_feed', {}, foreignKey)).status, 200, 'the other workspace key still works');

      const { id: selfId, key: self } = await server.key(ws, ['admin']);
      const own = await call('revoke_key', { id: selfId }, self);
      assert.equal(own.status, 200, own.text);
      assert.equal((await call('list_keys', {}, self)).status, 401, 'its next call is refused');
    });

    it('bad input: a clear invalid_argument, never a 500', async () => {
      const cases: Array<[string, unknown, RegExp]> = [
        ['create_key', {}, /permissions/],
        ['create_key', { permissions: ['fly'] }, /permissions/],
        ['create_key', { permissions: ['read'], secret: 'x' }, /secret/],
        ['create_key', { permissions: ['read'], mailboxes: ['inbox'] }, /mailboxes/],
        ['create_key', { permissions: ['read'], label: 'x'.repeat(201) }, /label/],
        ['list_keys', { limit: 0 }, /limit/],
        ['list_keys', { page_token: 'nope' }, /page_token/],
        ['revoke_key', {}, /id/],
        ['revoke_key', { id: 'efk_whatever' }, /id/],
      ];
      for (const [operation, body, message] of cases) {
        const response = await call(operation, body, admin);
        assert.equal(response.status, 400, `${operation} ${JSON.stringify(body)}: ${response.text}`);
        assert.equal(response.json.error.code, 'invalid_argument');
        assert.match(response.json.error.message, message, `${operation} ${JSON.stringify(body)}`);
      }
    });

    it('keys without admin are refused, and the key operations are not MCP tools', async () => {
      const { key: writer } = await server.key(ws, ['read', 'write']);
      for (const operation of ['create_key', 'list_keys', 'revoke_key']) {
        const response = await call(
          operation,
          operation === 'create_key' ? { permissions: ['read'] } : operation === 'revoke_key' ? { id: newKeyId() } : {},
          writer,
        );
        assert.equal(response.status, 403, response.text);
        assert.match(response.json.error.message, /"admin" permission/);
      }
      const tools = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      const text = await tools.text();
      assert.equal(tools.status, 200, text);
      assert.ok(text.includes('event_feed'), text.slice(0, 200));
      assert.ok(!/create_key|list_keys|revoke_key/.test(text));
    });

    it('list_keys pages in creation order, each key once', async () => {
      const listWs = await server.workspace({ name: 'Paging' });
      const { key: pagingAdmin } = await server.key(listWs, ['read', 'admin']);
      for (let i = 0; i < 6; i++) await createKey({ permissions: ['read'], label: `k${i}` }, pagingAdmin);
      const pages: any[][] = [];
      let token: string | null = null;
      do {
        const response = await call('list_keys', token ? { limit: 3, page_token: token } : { limit: 3 }, pagingAdmin);
        assert.equal(response.status, 200, response.text);
        pages.push(response.json.keys);
        token = response.json.next_page_token;
      } while (token);
      assert.deepEqual(
        pages.map((p) => p.length),
        [3, 3, 1],
      );
      assert.deepEqual(
        pages.flat().map((k) => k.label),
        [null, 'k0', 'k1', 'k2', 'k3', 'k4', 'k5'],
      );
    });

    it(`a workspace holds at most ${MAX_ACTIVE_KEYS_PER_WORKSPACE} active keys; a restricted admin's list reads a bounded number per call`, async () => {
      const capWs = await server.workspace({ name: 'Cap' });
      const { id: capAdminId, key: capAdmin } = await server.key(capWs, ['read', 'admin'], ['mbx_cap']);
      // Rows written directly (the cap is about the count, not how keys came): revoked keys the
      // restricted admin may not see, then active ones up to one below the cap (the admin is one).
      const filler = (n: number, revokedAt: number | null) =>
        Array.from({ length: n }, () => ({
          id: newKeyId(),
          workspace_id: capWs,
          secret_sha256: '00'.repeat(32),
          permissions: 'read',
          mailboxes: null,
          label: null,
          created_at: Date.now(),
          revoked_at: revokedAt,
        }));
      for (const rows of chunks(
        [...filler(LIST_KEYS_SCAN_BUDGET + 100, Date.now()), ...filler(MAX_ACTIVE_KEYS_PER_WORKSPACE - 2, null)],
        200,
      )) {
        await server.db('api_keys').insert(rows);
      }
      const last = await createKey({ permissions: ['read'], mailboxes: ['mbx_cap'] }, capAdmin);
      const refused = await call('create_key', { permissions: ['read'], mailboxes: ['mbx_cap'] }, capAdmin);
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.json.error.message, new RegExp(`at most ${MAX_ACTIVE_KEYS_PER_WORKSPACE} active keys`));
      assert.equal((await call('revoke_key', { id: last.api_key.id }, capAdmin)).status, 200);
      await createKey({ permissions: ['read'], mailboxes: ['mbx_cap'] }, capAdmin);

      // The restricted admin's own keys lie after thousands it may not see: pages stop looking and say where to go on.
      const first = await call('list_keys', { include_revoked: true }, capAdmin);
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(
        first.json.keys.map((k: any) => k.id),
        [capAdminId],
      );
      assert.ok(first.json.next_page_token, 'it stopped looking: more to read');
      const all = await listAll(capAdmin, { include_revoked: true });
      assert.deepEqual(all.map((k) => k.id).sort(), [capAdminId, last.api_key.id, all.at(-1).id].sort());
    });

    it('concurrent creations at the cap: exactly as many succeed as there is room for', async () => {
      const raceWs = await server.workspace({ name: 'Race' });
      const { key: raceAdmin } = await server.key(raceWs, ['read', 'admin']);
      const room = 5;
      const rows = Array.from({ length: MAX_ACTIVE_KEYS_PER_WORKSPACE - 1 - room }, () => ({
        id: newKeyId(),
        workspace_id: raceWs,
        secret_sha256: '00'.repeat(32),
        permissions: 'read',
        mailboxes: null,
        label: null,
        created_at: Date.now(),
      }));
      for (const batch of chunks(rows, 200)) await server.db('api_keys').insert(batch);
      const answers = await Promise.all(Array.from({ length: 12 }, () => call('create_key', { permissions: ['read'] }, raceAdmin)));
      assert.deepEqual(answers.map((a) => a.status).sort(), [...Array(room).fill(201), ...Array(12 - room).fill(400)]);
      const active = await server.db('api_keys').where({ workspace_id: raceWs }).whereNull('revoked_at').count({ n: '*' }).first();
      assert.equal(Number(active!.n), MAX_ACTIVE_KEYS_PER_WORKSPACE);
      for (const a of answers) if (a.status === 201) secretsShown.push(SECRET_PART(a.json.key));
    });

    it('the log never holds a secret of a key created, listed or revoked', () => {
      assert.ok(secretsShown.length > 10 && logged.length > 10, `${secretsShown.length} keys, ${logged.length} log lines`);
      const log = logged.join('');
      for (const secret of [...secretsShown, SECRET_PART(admin)]) assert.ok(!log.includes(secret), 'a secret in the log');
    });
  });
}

function chunks<T>(items: T[], size: number): T[][] {
  return Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
}
