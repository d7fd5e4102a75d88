/** The store under test: the real append path (publishInTransaction) and the real read operation (eventFeed). */
import type { Knex } from 'knex';
import { ChangeWatch } from '../../src/change-watch.ts';
import { CursorCodec } from '../../src/feed/cursor.ts';
import { FeedReader } from '../../src/feed/reader.ts';
import { feedStorageOn } from '../../src/feed/storage.ts';
import { createLogger } from '../../src/log.ts';
import { dbKind } from '../../src/store/db.ts';
import { listenForHeads, type HeadListener } from '../../src/store/head-listener.ts';
import { publishInTransaction } from '../../src/feed/publish.ts';
import { pageEnvelopes } from '../../src/feed/page.ts';
import { eventFeed } from '../../src/operations/event-feed.ts';
import { seenFromEnvelope, type FeedStore } from './model.ts';

const codec = new CursorCodec('stress-harness-secret-0123456789abcdef');

// Each reader's database gets the heads a server has: on Postgres, told of every commit by their
// own channel, so polls at the head are answered without a query, as in the service.
const readersOf = new WeakMap<Knex, FeedReader>();
const listeners: HeadListener[] = [];
function readerFor(db: Knex): FeedReader {
  let reader = readersOf.get(db);
  if (!reader) {
    const changes = new ChangeWatch();
    readersOf.set(db, (reader = new FeedReader(feedStorageOn(db), changes.heads)));
    const url = (db.client.config.connection as { connectionString?: string } | undefined)?.connectionString;
    if (dbKind(db) === 'postgres' && url) listeners.push(listenForHeads(url, changes, createLogger('silent')));
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
      { cursors: codec, principal, feed: readerFor(db) },
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
