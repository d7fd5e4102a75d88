import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { findByIds } from '../src/store/events.ts';
import { openDatabase } from '../src/store/db.ts';
import { migrateLatest } from '../src/store/migrate.ts';
import { writeTransaction } from '../src/store/write-transaction.ts';
import { sqliteDatabase } from './support/databases.ts';

describe('SQLite writers in several processes', () => {
  it('a read-then-write transaction waits for another process holding the write lock instead of failing', async () => {
    const database = await sqliteDatabase();
    const db = openDatabase(database.url);
    await migrateLatest(db);
    const file = database.url.slice('sqlite:'.length);
    // Another process takes the write lock and keeps it for 800 ms.
    const holder = spawn(process.execPath, [
      '-e',
      `const D = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))}); const d = new D(${JSON.stringify(file)});
       d.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
       setTimeout(() => { d.exec('COMMIT'); process.exit(0); }, 800);`,
    ]);
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    try {
      const started = Date.now();
      await writeTransaction(db, async (trx) => {
        await findByIds(trx, [{ workspaceId: 'ws_none', ids: ['evt_x'] }]); // a read first, as publishInTransaction does
        await trx('settings').insert({ key: 'contention-test', value: 'written' });
      });
      assert.ok(Date.now() - started >= 500, 'it waited for the lock');
      assert.equal((await db('settings').where({ key: 'contention-test' }).first())?.value, 'written');
    } finally {
      holder.kill();
      await db.destroy();
      await database.drop();
    }
  });
});
