/** The store under test: the real append path (publishInTransaction) and the real read operation (eventFeed). */
import type { Knex } from 'knex';
import { CursorCodec } from '../../src/feed/cursor.ts';
import { FeedReader } from '../../src/feed/reader.ts';
import { createLogger } from '../../src/base/log.ts';
import { openStore } from '../../src/store/open-store.ts';
import { watchChanges } from '../../src/app/services.ts';
import type { ChangeListener as HeadListener, Store } from '../../src/store/port.ts';
import { publishInTransaction } from '../../src/feed/publish.ts';
import { pageEnvelopes } from '../../src/feed/page.ts';
import { permit } from '../../src/auth/principal.ts';
import { eventFeed } from '../../src/operations/event-feed.ts';
import { seenFromEnvelope, type FeedStore } from './model.ts';

const codec = new CursorCodec('stress-harness-secret-0123456789abcdef');

/** The harness passes knex handles around; each is a Store's (openHarnessDb), found again here. */
const storesOf = new WeakMap<Knex, Store>();

/** A handle on the database as the service opens it: its knex, whose Store the real store reads through. */
export function openHarnessDb(url: string): Knex {
  const store = openStore(url);
  storesOf.set(store.knex, store);
  return store.knex;
}

const storeOf = (db: Knex): Store => {
  const store = storesOf.get(db);
  if (!store) throw new Error('open the database with openHarnessDb');
  return store;
};

// Each reader's database gets the feed reader a server has: where the store has a change channel
// (Postgres), its heads told of every commit by their own, so polls at the head are answered
// without a query; on SQLite, checking the file for other processes' writes, as in the service.
const readersOf = new WeakMap<Knex, FeedReader>();
const listeners: HeadListener[] = [];
function readerFor(db: Knex): FeedReader {
  let reader = readersOf.get(db);
  if (!reader) {
    const store = storeOf(db);
    const changes = watchChanges(store);
    readersOf.set(db, (reader = new FeedReader(store, changes.heads)));
    if (store.listenForChanges) listeners.push(store.listenForChanges(changes, createLogger('silent')));
  }
  return reader;
}

export const realStore: FeedStore = {
  name: 'feed_counters (src)',
  gapFree: true,
  async setup() {},
  async append(trx, ws, events) {
    await publishInTransaction(trx, ws, events, new Date());
  },
  async read(db, principal, after, limit) {
    const page = await eventFeed(
      { cursors: codec, principal: permit(principal, 'read'), feed: readerFor(db) },
      after === undefined ? { limit } : { after, limit },
    );
    return { events: pageEnvelopes(page.events).map(seenFromEnvelope), nextCursor: page.next_cursor };
  },
  cursorKey: (ws, cursor) => codec.decode(ws, cursor),
  async teardown() {
    await Promise.all(listeners.splice(0).map((listener) => listener.stop()));
  },
  async truth(db) {
    const rows = await db('events').select('workspace_id', 'id', 'seq', 'mailbox_id');
    return rows.map((r) => ({ ws: r.workspace_id, id: r.id, key: Number(r.seq), mailbox: r.mailbox_id ?? null }));
  },
  async counters(db) {
    const rows = await db('feed_counters').select('workspace_id', 'last_seq');
    return new Map(rows.map((r) => [r.workspace_id as string, Number(r.last_seq)]));
  },
};
