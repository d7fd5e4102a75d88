import type { EmitEventRequest } from '../../generated/types.ts';
import { createKey } from '../auth/api-keys.ts';
import type { Clock } from '../clock.ts';
import { publish } from '../library.ts';
import type { Db } from '../store/db.ts';
import { createWorkspace } from '../store/workspaces.ts';
import { demoTraffic } from './traffic.ts';

export interface DemoWorkspace {
  workspaceId: string;
  readKey: string;
  writeKey: string;
  eventCount: number;
}

/** A demo workspace (left unverified: the feed works either way) with a week of mail activity. */
export async function seedDemoWorkspace(db: Db, clock: Clock, eventCount = 300): Promise<DemoWorkspace> {
  const now = clock.now();
  const workspace = await createWorkspace(db, 'Démo — Atelier Lumière', false, now.getTime());
  const events: EmitEventRequest[] = demoTraffic(eventCount, now);
  await db.transaction((trx) => publish(trx, workspace.id, events, clock));
  const read = await createKey(db, { workspaceId: workspace.id, permissions: ['read'], mailboxes: null, label: 'demo read' }, now.getTime());
  const write = await createKey(db, { workspaceId: workspace.id, permissions: ['read', 'write'], mailboxes: null, label: 'demo write' }, now.getTime());
  return { workspaceId: workspace.id, readKey: read.key, writeKey: write.key, eventCount: events.length };
}
