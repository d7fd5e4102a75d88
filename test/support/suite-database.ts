import { after, before } from 'node:test';
import { openStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/port.ts';
import type { TestDatabase } from './databases.ts';

/** A migrated database for the enclosing suite: created and handed to `opened` before its tests, dropped after them. */
export function suiteDatabase(create: () => Promise<TestDatabase>, opened: (store: Store) => void | Promise<void>): void {
  let database: TestDatabase;
  let store: Store;
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
