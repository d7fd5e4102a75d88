import type { EmitEventRequest } from '../../generated/types.ts';
import { createKey } from '../auth/api-keys.ts';
import type { Clock } from '../base/clock.ts';
import { publish } from '../library.ts';
import type { OpenedStore } from '../store/open-store.ts';
import type { DemoKeys } from './demo-keys-file.ts';
import { demoTraffic } from './traffic.ts';

export interface DemoWorkspace extends DemoKeys {
  eventCount: number;
}

/**
 * A demo workspace (left unverified: the feed works either way) with a week of mail activity and
 * a key per use: read, write (read too, to see what it wrote) and admin (every permission, so it
 * can create keys of each kind and manage webhooks).
 */
export async function seedDemoWorkspace(store: OpenedStore, clock: Clock, eventCount = 300): Promise<DemoWorkspace> {
  const now = clock.now();
  const workspace = await store.createWorkspace('Démo — Atelier Lumière', false, now.getTime());
  const events: EmitEventRequest[] = demoTraffic(eventCount, now);
  // Through the library, as the mail service's own code would publish.
  await store.knex.transaction((trx) => publish(trx, workspace.id, events, clock));
  const key = async (permissions: Array<'read' | 'write' | 'admin'>, label: string) =>
    (await createKey(store, { workspaceId: workspace.id, permissions, mailboxes: null, label }, now.getTime())).key;
  return {
    workspaceId: workspace.id,
    readKey: await key(['read'], 'demo read'),
    writeKey: await key(['read', 'write'], 'demo write'),
    adminKey: await key(['read', 'write', 'admin'], 'demo admin'),
    eventCount: events.length,
  };
}
