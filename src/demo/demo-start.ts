import { existsSync } from 'node:fs';
import { authenticate } from '../auth/api-keys.ts';
import type { Clock } from '../base/clock.ts';
import { ROOT } from '../base/paths.ts';
import type { OpenedStore } from '../store/open-store.ts';
import type { Store } from '../store/port.ts';
import { demoKeysPath, loadDemoKeys, saveDemoKeys, type DemoKeys } from './demo-keys-file.ts';
import { seedKitFixtures, type KitKeys } from './kit-fixtures.ts';
import { seedDemoWorkspace } from './seed.ts';

const KEY_NAMES = { readKey: 'READ_KEY', writeKey: 'WRITE_KEY', adminKey: 'ADMIN_KEY' } as const;

/** What `serve --seed-demo` tells at start: the demo's keys as shell lines, and notes. */
export interface DemoAtStart {
  /** Only the keys that work now: `NAME=efk_…`. */
  exports: Array<{ name: string; key: string }>;
  /**
   * The conformance kit's variables besides its base URL (conformance/README.md), when every key
   * it takes works as it should: printed with the command that runs the kit.
   */
  kit?: Array<{ name: string; value: string }>;
  notes: string[];
}

/**
 * Seeds the demo on an empty database, with what the conformance kit needs (seedKitFixtures), and
 * keeps its keys beside it (saveDemoKeys); on a later start of that database, finds them again
 * and checks each still works (one revoked since is not printed, and said so). A demo database
 * seeded before the kit's keys existed gets them at its next start.
 */
export async function demoAtStart(store: OpenedStore, clock: Clock, databaseUrl: string): Promise<DemoAtStart> {
  const path = demoKeysPath(databaseUrl);
  if ((await store.countWorkspaces()) === 0) {
    const demo = await seedDemoWorkspace(store, clock);
    const kit = await seedKitFixtures(store, clock, demo.workspaceId);
    const notes = [
      `Demo workspace ${demo.workspaceId} seeded with ${demo.eventCount} mail events, and a second one, ${kit.otherWorkspaceId}, for the conformance kit's isolation checks.`,
    ];
    if (path) {
      saveDemoKeys(path, { ...demo, kit });
      notes.push(`Its keys are kept in ${path} (owner only) and printed again at every start of this database.`);
    } else {
      notes.push('Its keys are shown this once (a Postgres database keeps them hashed only): note them now.');
    }
    return { exports: exportsOf(demo), kit: kitVariables(demo.readKey, kit), notes };
  }
  const kept = path ? loadDemoKeys(path) : undefined;
  if (!kept) {
    return {
      exports: [],
      notes: [
        'This database was not seeded here with --seed-demo (no demo keys kept beside it): create keys with `event-feed key create`.',
      ],
    };
  }
  const exports = [];
  const notes = [`Demo workspace ${kept.workspaceId}, keys from ${path}:`];
  for (const { name, key } of exportsOf(kept)) {
    if (await worksIn(store, key, kept.workspaceId)) exports.push({ name, key });
    else notes.push(`${name} no longer works (revoked): not printed.`);
  }
  let kit = kept.kit;
  if (!kit && exports.some(({ name }) => name === 'READ_KEY')) {
    kit = await seedKitFixtures(store, clock, kept.workspaceId);
    saveDemoKeys(path!, { ...kept, kit });
    notes.push(
      `Seeded what the conformance kit needs: keys restricted, without read and revoked, and a second workspace, ${kit.otherWorkspaceId}.`,
    );
  }
  // Without READ_KEY (revoked, said above) the kit has no key to read with: no command.
  if (!kit) return { exports, notes };
  const broken = await brokenKitKeys(store, kept, kit);
  if (broken.length) {
    notes.push(`The conformance kit's command is not printed: ${broken.join(', ')} no longer works as the kit needs (revoked).`);
    return { exports, notes };
  }
  return { exports, kit: kitVariables(kept.readKey, kit), notes };
}

const exportsOf = (keys: DemoKeys) =>
  (Object.keys(KEY_NAMES) as Array<keyof typeof KEY_NAMES>).map((field) => ({ name: KEY_NAMES[field], key: keys[field] }));

const worksIn = async (store: Store, key: string, workspaceId: string) => (await authenticate(store, key))?.workspaceId === workspaceId;

/** The kit's variables whose key no longer does what the kit takes it for. */
async function brokenKitKeys(store: Store, demo: DemoKeys, kit: KitKeys): Promise<string[]> {
  const broken = [];
  if (!(await worksIn(store, demo.readKey, demo.workspaceId))) broken.push('EVENT_FEED_KEY');
  if (!(await worksIn(store, kit.restrictedKey, demo.workspaceId))) broken.push('EVENT_FEED_RESTRICTED_KEY');
  if (!(await worksIn(store, kit.noReadKey, demo.workspaceId))) broken.push('EVENT_FEED_NOREAD_KEY');
  if (!(await worksIn(store, kit.otherKey, kit.otherWorkspaceId))) broken.push('EVENT_FEED_OTHER_KEY');
  return broken;
}

const kitVariables = (readKey: string, kit: KitKeys) => [
  { name: 'EVENT_FEED_KEY', value: readKey },
  { name: 'EVENT_FEED_RESTRICTED_KEY', value: kit.restrictedKey },
  { name: 'EVENT_FEED_RESTRICTED_MAILBOXES', value: kit.restrictedMailboxes.join(',') },
  { name: 'EVENT_FEED_NOREAD_KEY', value: kit.noReadKey },
  { name: 'EVENT_FEED_OTHER_KEY', value: kit.otherKey },
  { name: 'EVENT_FEED_REVOKED_KEY', value: kit.revokedKey },
];

/** A word for a shell: as it is when nothing in it is special, else in single quotes. */
const shellWord = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/** Where the kit's view checks look for Chromium (the kit's chromiumPath). */
const chromium = () => process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** The text printed on stdout: ready to paste into a shell, then a first request with the read key, then the kit's command. */
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
  if (demo.kit) {
    lines.push(
      'Check this deployment with the conformance kit, read-only (every check that emits nothing runs; none is skipped):',
      '',
      `  export EVENT_FEED_BASE_URL=${url}`,
      ...demo.kit.map(({ name, value }) => `  export ${name}=${value}`),
      `  cd ${shellWord(ROOT)} && npx event-feed conformance`,
      '',
    );
    if (!existsSync(chromium()))
      lines.push(
        `(No Chromium at ${chromium()}: the kit will skip the web view's checks. Install Debian's chromium, or set CHROMIUM_PATH.)`,
        '',
      );
  }
  lines.push(`API reference: ${url}/docs`, '');
  return lines.join('\n');
}
