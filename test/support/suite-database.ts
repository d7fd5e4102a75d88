import { after, before } from 'node:test';
import { migrateLatest, openDatabase } from '../../src/library.ts';
import type { Db } from '../../src/store/db.ts';
import type { TestDatabase } from './databases.ts';

/** A migrated database for the enclosing suite: created and handed to `opened` before its tests, dropped after them. */
export function suiteDatabase(create: () => Promise<TestDatabase>, opened: (db: Db) => void | Promise<void>): void {
  let database: TestDatabase;
  let db: Db;
  before(async () => {
    database = await create();
    db = openDatabase(database.url);
    await migrateLatest(db);
    await opened(db);
  });
  after(async () => {
    await db.destroy();
    await database.drop();
  });
}
