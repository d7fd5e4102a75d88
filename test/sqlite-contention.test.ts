import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import type { EmitEventRequest } from '../generated/types.ts';
import { systemClock } from '../src/base/clock.ts';
import { GroupCommit } from '../src/feed/group-commit.ts';
import { newEventId } from '../src/base/ids.ts';
import { newKey } from '../src/auth/api-keys.ts';
import { openStore } from '../src/store/open-store.ts';
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
    const store = openStore(database.url);
    await store.migrate();
    const ws = await store.createWorkspace('contention', true, Date.now());
    const holder = await holdWriteLock(database.url.slice('sqlite:'.length), 800);
    try {
      const started = Date.now();
      const created = newKey({ workspaceId: ws.id, permissions: ['read'], mailboxes: null }, Date.now());
      await store.write(async (tx) => {
        await tx.countActiveKeys(ws.id); // a read first, as create_key does
        await tx.insertKey(created.row);
      });
      assert.ok(Date.now() - started >= 500, 'it waited for the lock');
      assert.equal((await store.keys.byId(created.id))?.secret_sha256, created.row.secret_sha256);
    } finally {
      holder.release();
      await store.close();
      await database.drop();
    }
  });

  it("the group commit's transaction (a read of client ids, then the append) waits for another process's write lock", async () => {
    const database = await sqliteDatabase();
    const store = openStore(database.url);
    await store.migrate();
    const ws = await store.createWorkspace('contention', true, Date.now());
    const holder = await holdWriteLock(database.url.slice('sqlite:'.length), 800);
    try {
      const started = Date.now();
      const groupCommit = new GroupCommit(store, systemClock);
      // A client-supplied id makes the transaction read before it writes.
      const published = await groupCommit.append(ws.id, { ...sampleEvent('mbx_sales', 1), id: newEventId() } as EmitEventRequest);
      assert.ok(Date.now() - started >= 500, 'it waited for the lock');
      const rows = await store.readPageRows({ workspaceId: ws.id, afterSeq: 0, limit: 10, mailboxes: null });
      assert.deepEqual(
        rows.map((row) => row.envelope),
        [published.envelope],
      );
    } finally {
      holder.release();
      await store.close();
      await database.drop();
    }
  });
});
