/**
 * The mechanisms under the hot paths, each tested for the promise it makes:
 * - group commit: concurrent emits share a transaction, keep arrival order and their own answers;
 * - the SQLite read connection: never waits behind a write transaction, never sees uncommitted rows;
 * - the page aggregate: falls back to the ordered aggregate when the fast one comes back out of order;
 * - background WAL checkpoints: they run, and a failing checkpointer hands back to SQLite's own;
 * - bin/event-feed.js runs dist/ only while it is as new as every source.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { EmitEventRequest } from '../generated/types.ts';
import { freshBuild } from '../bin/fresh-build.js';
import { systemClock } from '../src/clock.ts';
import { ApiError } from '../src/errors.ts';
import { GroupCommit } from '../src/feed/group-commit.ts';
import { publishInTransaction } from '../src/feed/publish.ts';
import { newEventId } from '../src/ids.ts';
import { migrateLatest, openDatabase } from '../src/library.ts';
import type { Db } from '../src/store/db.ts';
import { readPageRows, readSqlitePage } from '../src/store/events.ts';
import { WalCheckpointer } from '../src/store/sqlite-connection.ts';
import { createWorkspace } from '../src/store/workspaces.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds, sqliteDatabase, type TestDatabase } from './support/databases.ts';

const emitRequest = (n: number, id?: string) => ({ ...sampleEvent('mbx_sales', n), ...(id ? { id } : {}) }) as EmitEventRequest;
const idOf = (envelope: string) => (JSON.parse(envelope) as { id: string }).id;
const allRows = (db: Db, workspaceId: string) => readPageRows(db, { workspaceId, afterSeq: 0, limit: 500, mailboxes: null });

/** Counts the transactions begun on db from now on (knex reports each BEGIN as a query). */
function countTransactions(db: Db): { readonly count: number; stop(): void } {
  const counter = {
    count: 0,
    stop: () => db.off('query', onQuery),
  };
  const onQuery = (query: { sql: string }) => {
    if (/^begin/i.test(query.sql)) counter.count++;
  };
  db.on('query', onQuery);
  return counter;
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`group commit (${kind})`, { skip }, () => {
    let database: TestDatabase;
    let db: Db;
    before(async () => {
      database = await create();
      db = openDatabase(database.url);
      await migrateLatest(db);
    });
    after(async () => {
      await db.destroy();
      await database.drop();
    });

    it('emits made in one turn share one transaction and are stored in arrival order', async () => {
      const ws = await createWorkspace(db, 'gc-order', true, Date.now());
      const groupCommit = new GroupCommit(db, systemClock);
      const transactions = countTransactions(db);
      const published = await Promise.all(Array.from({ length: 40 }, (_, n) => groupCommit.append(ws.id, emitRequest(n))));
      transactions.stop();
      assert.equal(transactions.count, 1, 'forty concurrent emits should commit together');
      assert.deepEqual(
        (await allRows(db, ws.id)).map((row) => idOf(row.envelope)),
        published.map((p) => idOf(p.envelope)),
      );
    });

    it('an emit that arrives while a transaction commits waits for the next one, not for a timer', async () => {
      const ws = await createWorkspace(db, 'gc-alone', true, Date.now());
      const groupCommit = new GroupCommit(db, systemClock);
      const transactions = countTransactions(db);
      const first = groupCommit.append(ws.id, emitRequest(1));
      await first;
      const second = await groupCommit.append(ws.id, emitRequest(2));
      transactions.stop();
      assert.equal(transactions.count, 2);
      assert.equal((await allRows(db, ws.id)).at(-1)!.envelope, second.envelope);
    });

    it('a conflicting id fails alone; the events sharing its transaction are stored', async () => {
      const ws = await createWorkspace(db, 'gc-conflict', true, Date.now());
      const groupCommit = new GroupCommit(db, systemClock);
      const taken = newEventId();
      await groupCommit.append(ws.id, emitRequest(1, taken));
      const transactions = countTransactions(db);
      const outcomes = await Promise.allSettled([
        groupCommit.append(ws.id, emitRequest(2)),
        groupCommit.append(ws.id, emitRequest(3, taken)), // same id, other content
        groupCommit.append(ws.id, emitRequest(4)),
      ]);
      transactions.stop();
      assert.equal(transactions.count, 1);
      assert.equal(outcomes[0].status, 'fulfilled');
      assert.equal(outcomes[2].status, 'fulfilled');
      assert.equal(outcomes[1].status, 'rejected');
      const err = (outcomes[1] as PromiseRejectedResult).reason as ApiError;
      assert.ok(err instanceof ApiError);
      assert.equal(err.code, 'invalid_argument');
      assert.equal((await allRows(db, ws.id)).length, 3);
    });

    it('the same id twice in flight (a client retrying early) is stored once and answered as a replay', async () => {
      const ws = await createWorkspace(db, 'gc-retry', true, Date.now());
      const groupCommit = new GroupCommit(db, systemClock);
      const id = newEventId();
      const [a, b] = await Promise.all([groupCommit.append(ws.id, emitRequest(7, id)), groupCommit.append(ws.id, emitRequest(7, id))]);
      assert.deepEqual([a.created, b.created], [true, false]);
      assert.equal(a.envelope, b.envelope);
      const rows = await allRows(db, ws.id);
      assert.deepEqual(
        rows.map((row) => idOf(row.envelope)),
        [id],
      );
    });

    it('events of several workspaces in one batch each land in their own feed, in order', async () => {
      const workspaces = await Promise.all([1, 2, 3].map((n) => createWorkspace(db, `gc-multi-${n}`, true, Date.now())));
      const groupCommit = new GroupCommit(db, systemClock);
      const calls = Array.from({ length: 30 }, (_, n) => ({ ws: workspaces[n % 3]!.id, n }));
      const published = await Promise.all(calls.map(({ ws, n }) => groupCommit.append(ws, emitRequest(n))));
      for (const ws of workspaces) {
        const expected = calls.flatMap((call, i) => (call.ws === ws.id ? [idOf(published[i]!.envelope)] : []));
        assert.deepEqual(
          (await allRows(db, ws.id)).map((row) => idOf(row.envelope)),
          expected,
        );
      }
    });
  });
}

describe('SQLite read connection', () => {
  let database: TestDatabase;
  let db: Db;
  before(async () => {
    database = await sqliteDatabase();
    db = openDatabase(database.url);
    await migrateLatest(db);
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });

  it('reads the committed state while a write transaction is open, without waiting for it', async () => {
    const ws = await createWorkspace(db, 'reader', true, Date.now());
    await db.transaction((trx) => publishInTransaction(trx, ws.id, [emitRequest(1)], new Date()));
    const trx = await db.transaction();
    try {
      const [pending] = await publishInTransaction(trx, ws.id, [emitRequest(2)], new Date());
      const read = await Promise.race([allRows(db, ws.id), sleep(2000).then(() => 'blocked' as const)]);
      assert.notEqual(read, 'blocked', 'the read waited behind the open write transaction');
      assert.equal((read as unknown[]).length, 1, 'the read saw an uncommitted event');
      await trx.commit();
      assert.deepEqual(
        (await allRows(db, ws.id)).map((row) => row.envelope).at(-1),
        pending!.envelope,
      );
    } finally {
      if (!trx.isCompleted()) await trx.rollback();
    }
  });

  it('a page whose fast aggregate comes back out of order is read again in order', async () => {
    const ws = await createWorkspace(db, 'aggregate', true, Date.now());
    await db.transaction((trx) => publishInTransaction(trx, ws.id, [1, 2, 3, 4, 5].map((n) => emitRequest(n)), new Date()));
    const inOrder = await allRows(db, ws.id);
    // Rows handed to the aggregate newest first: the unordered group_concat keeps that order.
    const page = await readSqlitePage(db, { sql: 'SELECT seq, envelope FROM events WHERE workspace_id = ? ORDER BY seq DESC', bindings: [ws.id] });
    assert.equal(page.count, 5);
    assert.equal(page.lastSeq, inOrder.at(-1)!.seq);
    assert.equal(page.events.toString(), inOrder.map((row) => row.envelope).join(','));
  });
});

describe('WAL checkpoints in the background', () => {
  it('copy committed writes into the database file while the service runs', async () => {
    const database = await sqliteDatabase();
    const db = openDatabase(database.url, { checkpointInBackground: true });
    try {
      await migrateLatest(db);
      const [setting] = (await db.raw('PRAGMA wal_autocheckpoint')) as Array<{ wal_autocheckpoint: number }>;
      assert.equal(setting?.wal_autocheckpoint, 0, 'the writing connection should leave checkpoints to the worker');
      const ws = await createWorkspace(db, 'checkpoint', true, Date.now());
      const file = database.url.slice('sqlite:'.length);
      await sleep(1200); // the migrations' pages reach the file first
      const sizeBefore = statSync(file).size;
      const events = Array.from({ length: 400 }, (_, n) => emitRequest(n));
      await db.transaction((trx) => publishInTransaction(trx, ws.id, events, new Date()));
      let grown = false;
      for (let waited = 0; waited < 5000 && !grown; waited += 100) {
        await sleep(100);
        grown = statSync(file).size > sizeBefore;
      }
      assert.ok(grown, 'no checkpoint moved the new pages into the database file');
    } finally {
      await db.destroy();
      await database.drop();
    }
  });

  it('a checkpointer that cannot work reports it, so SQLite checkpoints by itself again', async () => {
    const failures: string[] = [];
    const checkpointer = new WalCheckpointer('/nonexistent-dir/feed.sqlite', (reason) => failures.push(reason));
    checkpointer.start();
    for (let waited = 0; waited < 5000 && failures.length === 0; waited += 50) await sleep(50);
    checkpointer.stop();
    assert.equal(failures.length, 1);
  });
});

describe('bin/event-feed.js build freshness', () => {
  const tree = () => {
    const root = mkdtempSync(join(tmpdir(), 'event-feed-bin-'));
    for (const dir of ['src/store', 'generated', 'dist']) mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, 'src/store/a.ts'), '');
    writeFileSync(join(root, 'generated/types.ts'), '');
    return root;
  };
  const age = (path: string, secondsAgo: number) => {
    const at = new Date(Date.now() - secondsAgo * 1000);
    utimesSync(path, at, at);
  };

  it('runs the build only when it is newer than every source', () => {
    const root = tree();
    try {
      assert.equal(freshBuild(root), false, 'no build yet');
      writeFileSync(join(root, 'dist/BUILT'), '');
      age(join(root, 'src/store/a.ts'), 60);
      age(join(root, 'generated/types.ts'), 60);
      assert.equal(freshBuild(root), true);
      age(join(root, 'src/store/a.ts'), 0);
      age(join(root, 'dist/BUILT'), 30);
      assert.equal(freshBuild(root), false, 'a source in a subfolder edited after the build');
      age(join(root, 'src/store/a.ts'), 60);
      age(join(root, 'generated/types.ts'), 0);
      assert.equal(freshBuild(root), false, 'generated/ changed after the build');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
