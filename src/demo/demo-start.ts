import { authenticate } from '../auth/api-keys.ts';
import type { Clock } from '../clock.ts';
import type { Store } from '../store/port.ts';
import { demoKeysPath, loadDemoKeys, saveDemoKeys, type DemoKeys } from './demo-keys-file.ts';
import { seedDemoWorkspace } from './seed.ts';

const KEY_NAMES = { readKey: 'READ_KEY', writeKey: 'WRITE_KEY', adminKey: 'ADMIN_KEY' } as const;

/** What `serve --seed-demo` tells at start: the demo's keys as shell lines, and notes. */
export interface DemoAtStart {
  /** Only the keys that work now: `NAME=efk_…`. */
  exports: Array<{ name: string; key: string }>;
  notes: string[];
}

/**
 * Seeds the demo on an empty database and keeps its keys beside it (demo-keys-file.ts); on a later
 * start of that database, finds them again and checks each still works (one revoked since is not
 * printed, and said so).
 */
export async function demoAtStart(store: Store, clock: Clock, databaseUrl: string): Promise<DemoAtStart> {
  const path = demoKeysPath(databaseUrl);
  if ((await store.countWorkspaces()) === 0) {
    const demo = await seedDemoWorkspace(store, clock);
    const notes = [`Demo workspace ${demo.workspaceId} seeded with ${demo.eventCount} mail events.`];
    if (path) {
      saveDemoKeys(path, demo);
      notes.push(`Its keys are kept in ${path} (owner only) and printed again at every start of this database.`);
    } else {
      notes.push('Its keys are shown this once (a Postgres database keeps them hashed only): note them now.');
    }
    return { exports: exportsOf(demo), notes };
  }
  const kept = path ? loadDemoKeys(path) : undefined;
  if (!kept) {
    return { exports: [], notes: ['This database was not seeded here with --seed-demo (no demo keys kept beside it): create keys with `event-feed key create`.'] };
  }
  const exports = [];
  const notes = [`Demo workspace ${kept.workspaceId}, keys from ${path}:`];
  for (const { name, key } of exportsOf(kept)) {
    const principal = await authenticate(store, key);
    if (principal?.workspaceId === kept.workspaceId) exports.push({ name, key });
    else notes.push(`${name} no longer works (revoked): not printed.`);
  }
  return { exports, notes };
}

const exportsOf = (keys: DemoKeys) => (Object.keys(KEY_NAMES) as Array<keyof typeof KEY_NAMES>).map((field) => ({ name: KEY_NAMES[field], key: keys[field] }));

/** The text printed on stdout: ready to paste into a shell, then a first request with the read key. */
export function demoBanner(url: string, demo: DemoAtStart): string {
  const lines = ['', ...demo.notes];
  if (demo.exports.length) {
    lines.push('', 'Paste into your shell:', '', ...demo.exports.map(({ name, key }) => `  export ${name}=${key}`), '');
  }
  if (demo.exports.some(({ name }) => name === 'READ_KEY')) {
    lines.push(
      'Then read the events again by cursor:',
      '',
      `  curl -s -X POST ${url}/v1/event_feed \\`,
      '    -H "Authorization: Bearer $READ_KEY" \\',
      "    -H 'Content-Type: application/json' \\",
      `    -d '{"limit": 5}'`,
      '',
    );
  }
  lines.push(`API reference: ${url}/docs`, '');
  return lines.join('\n');
}
