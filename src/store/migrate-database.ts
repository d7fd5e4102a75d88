import type { Logger } from '../base/log.ts';
import { openStore } from './open-store.ts';

/** Migrations on a handle of their own, without the query timeout: building an index on a big table takes time. */
export async function migrateDatabase(url: string, log: Logger): Promise<void> {
  const store = openStore(url, { queryTimeoutMs: 0 });
  try {
    const applied = await store.migrate();
    if (applied.length) log.info({ migrations: applied }, 'database migrated');
  } finally {
    await store.close();
  }
}
