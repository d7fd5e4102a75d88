/**
 * The storage port: everything the service asks of its database, split by who asks (port/):
 * FeedStore (the feed), KeyStore (keys, workspaces), WebhookStore (endpoints, outbox,
 * deliveries), WriteStore (reads and writes in one transaction), ChangeStore (others' writes,
 * replicas), MaintenanceStore (retention, migrations, metrics, closing) and OAuth's tables. A
 * consumer takes the narrowest of them it needs; `Store` is all of them, what openStore opens.
 * Nothing outside src/store/ sees SQL, a driver or which database is behind it: where the
 * databases differ in what they can do, the port says so as a capability (`othersWritesVersion`,
 * `listenForChanges`, `appends`). The port's types are plain data, decoded from their columns:
 * no knex, no column encoding.
 */
import type { ChangeStore } from './port/changes.ts';
import type { ErasureStore } from './port/erasures.ts';
import type { FeedStore } from './port/feed.ts';
import type { KeyStore } from './port/keys.ts';
import type { MaintenanceStore } from './port/maintenance.ts';
import type { OAuthStore } from './port/oauth.ts';
import type { WebhookStore } from './port/webhooks.ts';
import type { WriteStore } from './port/writes.ts';

export type * from './port/changes.ts';
export type * from './port/erasures.ts';
export type * from './port/feed.ts';
export type * from './port/keys.ts';
export type * from './port/maintenance.ts';
export type * from './port/oauth.ts';
export type * from './port/webhooks.ts';
export type * from './port/writes.ts';
export { isWhole } from './port/feed.ts';
export { OutcomeUnknown } from './port/outcome-unknown.ts';

export type Store = FeedStore & KeyStore & WebhookStore & WriteStore & ChangeStore & MaintenanceStore & OAuthStore & ErasureStore;
