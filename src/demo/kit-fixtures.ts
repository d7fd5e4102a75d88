import { createKey, revokeKey } from '../auth/api-keys.ts';
import type { Clock } from '../base/clock.ts';
import { publish } from '../library.ts';
import type { OpenedStore } from '../store/open-store.ts';
import { demoTraffic } from './traffic.ts';

/**
 * What the conformance kit takes besides a read key (conformance/README.md), for the demo: a key
 * restricted to some of its mailboxes, a key without `read`, a revoked key, and a read key of a
 * second workspace with events of its own (for the isolation checks: no API call can make a
 * workspace). With these, the kit's read-only run skips no check.
 */
export interface KitKeys {
  restrictedKey: string;
  /** The mailboxes `restrictedKey` is restricted to: the demo has events inside and outside them. */
  restrictedMailboxes: string[];
  noReadKey: string;
  revokedKey: string;
  otherWorkspaceId: string;
  otherKey: string;
}

/** Two of the demo's five mailboxes (demoTraffic): its events are both inside and outside them. */
const RESTRICTED_MAILBOXES = ['mbx_claire', 'mbx_hugo'];
const OTHER_WORKSPACE_EVENTS = 24;

/** Seeds the kit's keys in the demo workspace and a second workspace beside it. */
export async function seedKitFixtures(store: OpenedStore, clock: Clock, demoWorkspaceId: string): Promise<KitKeys> {
  const now = clock.now();
  const key = async (
    workspaceId: string,
    permissions: Array<'read' | 'write' | 'admin'>,
    label: string,
    mailboxes: string[] | null = null,
  ) => createKey(store, { workspaceId, permissions, mailboxes, label }, now.getTime());
  const other = await store.createWorkspace('Démo — Autre espace', false, now.getTime());
  await store.knex.transaction((trx) => publish(trx, other.id, demoTraffic(OTHER_WORKSPACE_EVENTS, now, 7), clock));
  const revoked = await key(demoWorkspaceId, ['read'], 'demo revoked (conformance kit)');
  await revokeKey(store, revoked.id, now.getTime());
  return {
    restrictedKey: (await key(demoWorkspaceId, ['read'], 'demo restricted (conformance kit)', RESTRICTED_MAILBOXES)).key,
    restrictedMailboxes: RESTRICTED_MAILBOXES,
    noReadKey: (await key(demoWorkspaceId, ['write'], 'demo without read (conformance kit)')).key,
    revokedKey: revoked.key,
    otherWorkspaceId: other.id,
    otherKey: (await key(other.id, ['read'], 'demo other workspace read (conformance kit)')).key,
  };
}
