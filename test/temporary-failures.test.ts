/**
 * Temporary failures of the database are answered 503 with Retry-After and the contract's
 * `internal` body, whose message says to retry (issue 41 #6), over HTTP and as an MCP tool error
 * (MCP's tools read: a read of a database that cannot be reached);
 * once the database is back, the same requests succeed without a restart.
 *
 * SQLite: a disk that fills up is the writing connection's `max_page_count` lowered to the file's
 * size (SQLITE_FULL, as a full disk answers); a read-only database is its `query_only` (SQLITE_READONLY).
 * Postgres: the service's own database refuses connections (ALLOW_CONNECTIONS false, its backends
 * terminated), then is read-only (default_transaction_read_only, its backends terminated).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import knexFactory from 'knex';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, sqliteDatabase } from './support/databases.ts';
import { rawToolCall } from './support/mcp.ts';
import { serverKnex, startTestServer, type TestServer } from './support/server.ts';
import { setTimeout as sleep } from 'node:timers/promises';

const EMIT = '/v1/emit_event';

/** Emits every 250 ms until one is stored (201); fails after `timeoutMs`. */
async function storedAgain(server: TestServer, key: string, n: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let res = await server.post(EMIT, sampleEvent('mbx_a', n), key);
  while (res.status !== 201 && Date.now() < deadline) {
    await sleep(250);
    res = await server.post(EMIT, sampleEvent('mbx_a', n), key);
  }
  assert.equal(res.status, 201, `not recovered: ${res.status} ${res.text}`);
}

/** A 503 of the contract: Retry-After of a few seconds, code internal with a request id, a message saying it is temporary. */
function assertTemporary(res: { status: number; headers: Headers; text: string; json: any }) {
  assert.equal(res.status, 503, res.text);
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 5, `Retry-After ${res.headers.get('retry-after')}`);
  assert.equal(contractErrors('Error', res.json), null, res.text);
  assert.equal(res.json.error.code, 'internal');
  assert.equal(res.json.error.request_id, res.headers.get('x-request-id'));
  assert.match(res.json.error.message, /temporar/, res.text);
  assert.match(res.json.error.message, /retry/, res.text);
}

/** The MCP tool error of the same failure (MCP's tools read: event_feed): the same code and message. */
async function assertTemporaryOverMcp(server: TestServer, key: string) {
  const { status, body } = await rawToolCall(server.url, key, 'event_feed', '{}');
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.result?.isError, true, JSON.stringify(body));
  const error = body.result._meta['event-feed/error'];
  assert.equal(error.code, 'internal', JSON.stringify(body));
  assert.match(error.message, /temporar.*retry/, JSON.stringify(body));
}

describe('temporary failures of SQLite are answered 503 with Retry-After', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer(await sqliteDatabase());
    key = (await server.key(await server.workspace(), ['read', 'write'])).key;
    assert.equal((await server.post(EMIT, sampleEvent('mbx_a', 0), key)).status, 201);
  });
  after(async () => {
    await server?.stop();
    await server?.database.drop();
  });

  it('a full disk (SQLITE_FULL): 503, then stored once there is room', async () => {
    const writer = serverKnex(server);
    const pages = Number(((await writer.raw('PRAGMA page_count')) as Array<{ page_count: number }>)[0]!.page_count);
    await writer.raw(`PRAGMA max_page_count = ${pages}`);
    try {
      const big = { ...sampleEvent('mbx_a', 1), data: { ...sampleEvent('mbx_a', 1).data, subject_line: 'x'.repeat(990) } };
      let res = await server.post(EMIT, big, key);
      for (let i = 0; i < 200 && res.status === 201; i++) res = await server.post(EMIT, big, key);
      assertTemporary(res);
      assert.match(res.json.error.message, /disk is full/, res.text);
    } finally {
      await writer.raw('PRAGMA max_page_count = 1073741823');
    }
    assert.equal((await server.post(EMIT, sampleEvent('mbx_a', 2), key)).status, 201);
  });

  it('a read-only database (SQLITE_READONLY): 503, then stored once writable', async () => {
    const writer = serverKnex(server);
    await writer.raw('PRAGMA query_only = ON');
    try {
      const res = await server.post(EMIT, sampleEvent('mbx_a', 3), key);
      assertTemporary(res);
      assert.match(res.json.error.message, /read-only/, res.text);
    } finally {
      await writer.raw('PRAGMA query_only = OFF');
    }
    assert.equal((await server.post(EMIT, sampleEvent('mbx_a', 4), key)).status, 201);
  });
});

describe(
  'temporary failures of Postgres are answered 503 with Retry-After',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
    let server: TestServer;
    let key: string;
    let name: string;
    const admin = knexFactory({ client: 'pg', connection: process.env.TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test' });
    const terminate = () =>
      admin.raw('select pg_terminate_backend(pid) from pg_stat_activity where datname = ? and pid <> pg_backend_pid()', [name]);
    before(async () => {
      const database = await postgresDatabase();
      name = new URL(database.url).pathname.slice(1);
      server = await startTestServer(database);
      key = (await server.key(await server.workspace(), ['read', 'write'])).key;
      assert.equal((await server.post(EMIT, sampleEvent('mbx_a', 0), key)).status, 201);
    });
    after(async () => {
      await admin.raw(`alter database ${name} allow_connections true`).catch(() => {});
      await server?.stop();
      await server?.database.drop();
      await admin.destroy();
    });

    it('a database that refuses connections: 503 for writes and reads, then recovers by itself', async () => {
      await admin.raw(`alter database ${name} allow_connections false`);
      try {
        await terminate();
        const emit = await server.post(EMIT, sampleEvent('mbx_a', 1), key);
        assertTemporary(emit);
        assertTemporary(await server.post('/v1/event_feed', {}, key));
        await assertTemporaryOverMcp(server, key);
      } finally {
        await admin.raw(`alter database ${name} allow_connections true`);
      }
      await storedAgain(server, key, 2);
    });

    it('a read-only database: 503 for a write, then stored once writable', async () => {
      await admin.raw(`alter database ${name} set default_transaction_read_only = on`);
      try {
        await terminate();
        const emit = await server.post(EMIT, sampleEvent('mbx_a', 3), key);
        assertTemporary(emit);
        assert.match(emit.json.error.message, /read-only/, emit.text);
      } finally {
        await admin.raw(`alter database ${name} reset default_transaction_read_only`);
        await terminate();
      }
      await storedAgain(server, key, 4);
    });
  },
);
