import { after, before } from 'node:test';
import { openStore, type OpenedStore } from '../../src/store/open-store.ts';
import type { TestDatabase } from './databases.ts';

/** A migrated database for the enclosing suite: created and handed to `opened` before its tests, dropped after them. */
export function suiteDatabase(create: () => Promise<TestDatabase>, opened: (store: OpenedStore) => void | Promise<void>): void {
  let database: TestDatabase;
  let store: OpenedStore;
  before(async () => {
    database = await create();
    store = openStore(database.url);
    await store.migrate();
    await opened(store);
  });
  after(async () => {
    await store.close();
    await database.drop();
  });
}
