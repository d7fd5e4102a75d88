import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import type { EmitEventRequest } from '../generated/types.ts';
import { systemClock } from '../src/clock.ts';
import { GroupCommit } from '../src/feed/group-commit.ts';
import { newEventId } from '../src/ids.ts';
import { findByIds, readPageRows } from '../src/store/events.ts';
import { openDatabase } from '../src/store/db.ts';
import { migrateLatest } from '../src/store/migrate.ts';
import { createWorkspace } from '../src/store/workspaces.ts';
import { writeTransaction } from '../src/store/write-transaction.ts';
import { sampleEvent } from './support/contract.ts';
import { sqliteDatabase } from './support/databases.ts';

/** Another process takes the file's write lock and keeps it for `ms`; resolves once it holds it. */
async function holdWriteLock(file: string, ms: number): Promise<{ release(): void }> {
  const holder = spawn(process.execPath, [
    '-e',
    `const D = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))}); const d = new D(${JSON.stringify(file)});
     d.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
     setTimeout(() => { d.exec('COMMIT'); process.exit(0); }, ${ms});`,
  ]);
  await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
  return { release: () => holder.kill() };
}

describe('SQLite writers in several processes', () => {
  it('a read-then-write transaction waits for another process holding the write lock instead of failing', async () => {
    const database = await sqliteDatabase();
    const db = openDatabase(database.url);
    await migrateLatest(db);
    const holder = await holdWriteLock(database.url.slice('sqlite:'.length), 800);
    try {
      const started = Date.now();
      await writeTransaction(db, async (trx) => {
        await findByIds(trx, [{ workspaceId: 'ws_none', ids: ['evt_x'] }]); // a read first, as publishInTransaction does
        await trx('settings').insert({ key: 'contention-test', value: 'written' });
      });
      assert.ok(Date.now() - started >= 500, 'it waited for the lock');
      assert.equal((await db('settings').where({ key: 'contention-test' }).first())?.value, 'written');
    } finally {
      holder.release();
      await db.destroy();
      await database.drop();
    }
  });

  it("the group commit's transaction (a read of client ids, then the append) waits for another process's write lock", async () => {
    const database = await sqliteDatabase();
    const db = openDatabase(database.url);
    await migrateLatest(db);
    const ws = await createWorkspace(db, 'contention', true, Date.now());
    const holder = await holdWriteLock(database.url.slice('sqlite:'.length), 800);
    try {
      const started = Date.now();
      const groupCommit = new GroupCommit(db, systemClock);
      // A client-supplied id makes the transaction read before it writes.
      const published = await groupCommit.append(ws.id, { ...sampleEvent('mbx_sales', 1), id: newEventId() } as EmitEventRequest);
      assert.ok(Date.now() - started >= 500, 'it waited for the lock');
      const rows = await readPageRows(db, { workspaceId: ws.id, afterSeq: 0, limit: 10, mailboxes: null });
      assert.deepEqual(rows.map((row) => row.envelope), [published.envelope]);
    } finally {
      holder.release();
      await db.destroy();
      await database.drop();
    }
  });
});
