import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { sqliteFileOf } from '../store/open-store.ts';
import type { KitKeys } from './kit-fixtures.ts';

/** The demo workspace's keys in full: kept only for the demo database that `serve --seed-demo` created. */
export interface DemoKeys {
  workspaceId: string;
  readKey: string;
  writeKey: string;
  adminKey: string;
  /** The conformance kit's (seedKitFixtures); absent from a file written before the demo seeded them. */
  kit?: KitKeys;
}

/**
 * Where the demo keys are kept: a file beside the SQLite database, readable by its owner only.
 * The database stores keys hashed, so the demo could not print them again otherwise; kept out of
 * the database itself, whose file is commonly readable by others. Postgres has no "beside": its
 * demo keys are printed at the first start only (undefined here).
 */
export function demoKeysPath(databaseUrl: string): string | undefined {
  const file = sqliteFileOf(databaseUrl);
  return file === undefined || file === ':memory:' ? undefined : `${file}.demo-keys.json`;
}

export function saveDemoKeys(path: string, keys: DemoKeys): void {
  // A file left by an earlier database is replaced, not rewritten: its mode is set at creation.
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  writeFileSync(path, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
}

/** The keys kept at `path`, or undefined when there is no such file or it is not one of ours. */
export function loadDemoKeys(path: string): DemoKeys | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const keys = JSON.parse(text) as Partial<DemoKeys>;
    const fields = [keys.workspaceId, keys.readKey, keys.writeKey, keys.adminKey];
    if (!fields.every((field) => typeof field === 'string')) return undefined;
    const { workspaceId, readKey, writeKey, adminKey } = keys as DemoKeys;
    return { workspaceId, readKey, writeKey, adminKey, ...(isKitKeys(keys.kit) ? { kit: keys.kit } : {}) };
  } catch {
    return undefined;
  }
}

function isKitKeys(kit: unknown): kit is KitKeys {
  if (typeof kit !== 'object' || kit === null) return false;
  const k = kit as Record<string, unknown>;
  const strings = [k.restrictedKey, k.noReadKey, k.revokedKey, k.otherWorkspaceId, k.otherKey];
  return (
    strings.every((field) => typeof field === 'string') &&
    Array.isArray(k.restrictedMailboxes) &&
    k.restrictedMailboxes.every((m) => typeof m === 'string')
  );
}
