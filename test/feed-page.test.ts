/**
 * The feed's page reads (store/common/feed-page.ts, sqlite/page.ts, postgres/page.ts): a page is its rows
 * joined, at most `limit` of them and at most PAGE_MAX_BYTES (always one), for the whole feed and
 * for keys restricted to any number of mailboxes; the work is bounded whatever the statistics;
 * and what the operation concludes from a page (heads, expiry, read-ahead) stays true.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Knex } from 'knex';
import { CursorCodec } from '../src/feed/cursor.ts';
import { ChangeWatch } from '../src/feed/change-watch.ts';
import { FeedReader } from '../src/feed/reader.ts';
import { SealedPages } from '../src/feed/sealed-pages.ts';
import type { FeedStorage } from '../src/feed/storage.ts';
import { PAGE_MAX_BYTES } from '../src/limits/page-bytes.ts';
import { publish } from '../src/library.ts';
import { permit } from '../src/auth/principal.ts';
import { eventFeed } from '../src/operations/event-feed.ts';
import { ApiError } from '../src/base/errors.ts';
import type { Knex as Db } from 'knex';
import { kindNamed, type OpenedStore } from '../src/store/open-store.ts';
import { postgresRows } from '../src/store/postgres/rows.ts';
import { sqliteRows } from '../src/store/sqlite/rows.ts';
import type { PageQuery, StoredPage } from '../src/store/port.ts';
import { pgPageStatement, readPgPage } from '../src/store/postgres/page.ts';
import { sqliteReaderOf } from '../src/store/sqlite/adapter.ts';
import { checkoutsDuring, sqliteReadsDuring } from './support/checkouts.ts';
import { largeEvent, sampleEvent } from './support/contract.ts';
import { databaseKinds } from './support/databases.ts';
import { suiteDatabase } from './support/suite-database.ts';
import { EventPartitions, listPartitions, WEEK_MS } from '../src/store/postgres/partitions.ts';
import { PAST_EPOCH_WEEK_MS, storeAt } from './support/stored-at.ts';

/** An event of ~2.5 kB with characters of 1 to 4 UTF-8 bytes: a page of 300 outgrows the Postgres reader's 512 kB scratch. */
const wideEvent = (n: number, mailboxId: string) => {
  const event = sampleEvent(mailboxId, n);
  return { ...event, data: { ...event.data, subject_line: `Réf ’${n}’ 😀 ${'é€x'.repeat(320)}` } };
};

/** A valid event of ~1.6 MB (2,000 recipients, long names): larger than a page may be, so it comes alone. */
const hugeEvent = (n: number, mailboxId: string) => {
  const event = sampleEvent(mailboxId, n);
  const domain = Array.from({ length: 3 }, () => 'x'.repeat(60)).join('.') + '.fr';
  const recipient = (i: number) => ({ email: `r${i}@${domain}`, name: 'é'.repeat(256) });
  return {
    ...event,
    data: {
      ...event.data,
      to: Array.from({ length: 1000 }, (_, i) => recipient(i)),
      cc: Array.from({ length: 1000 }, (_, i) => recipient(1000 + i)),
    },
  };
};

/** What a page must be: its rows (at most `limit`), in seq order, stopping before the row that would pass the byte cap. */
async function expectPage(store: OpenedStore, q: PageQuery, page: StoredPage): Promise<void> {
  const rows = await store.readPageRows(q);
  const kept: string[] = [];
  let bytes = -1;
  for (const row of rows) {
    bytes += Buffer.byteLength(row.envelope) + 1;
    if (kept.length > 0 && bytes > PAGE_MAX_BYTES) break;
    kept.push(row.envelope);
  }
  const label = `page after ${q.afterSeq} (limit ${q.limit}, mailboxes ${q.mailboxes?.length ?? 'all'})`;
  assert.equal(page.count, kept.length, label);
  assert.equal(page.lastSeq, kept.length ? rows[kept.length - 1]!.seq : undefined, label);
  assert.equal(page.cutAtByteCap, kept.length < rows.length, `${label}: cutAtByteCap`);
  assert.ok(page.bytes.equals(Buffer.from(kept.join(','))), `${label} differs from its rows`);
  assert.ok(page.bytes.length <= PAGE_MAX_BYTES || page.count === 1, `${label}: over the byte cap`);
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`feed pages as bytes (${kind})`, { skip }, () => {
    let db: Db;
    let store: OpenedStore;
    let workspaceId: string;
    suiteDatabase(create, async (opened) => {
      store = opened;
      db = opened.knex;
      workspaceId = (await store.createWorkspace('pages', true, Date.now())).id;
      for (let batch = 0; batch < 7; batch++) {
        await db.transaction((trx) =>
          publish(
            trx,
            workspaceId,
            Array.from({ length: 100 }, (_, i) => wideEvent(batch * 100 + i, i % 3 === 0 ? 'mbx_b' : 'mbx_a')),
          ),
        );
      }
    });

    const queries = () => [
      { workspaceId, afterSeq: 0, limit: 500, mailboxes: null },
      { workspaceId, afterSeq: 123, limit: 300, mailboxes: null },
      { workspaceId, afterSeq: 650, limit: 100, mailboxes: null },
      { workspaceId, afterSeq: 10, limit: 200, mailboxes: ['mbx_b'] },
      { workspaceId, afterSeq: 700, limit: 100, mailboxes: null },
    ];

    it('a page is its rows joined, up to the byte cap, whatever its size and characters', async () => {
      for (const q of queries()) await expectPage(store, q, await store.readPage(q));
      const full = await store.readPage(queries()[0]!);
      assert.ok(full.bytes.length > 512 * 1024, 'the first page should outgrow the scratch buffer');
      assert.ok(full.cutAtByteCap && full.count < 500, 'the first page stops at the byte cap');
      assert.equal((JSON.parse(`[${full.bytes.toString('utf8')}]`) as unknown[]).length, full.count);
    });

    it('each event once, in order, paging page after page', async () => {
      for (const mailboxes of [null, ['mbx_b'], ['mbx_a', 'mbx_b', 'mbx_z']]) {
        const all = await store.readPageRows({ workspaceId, afterSeq: 0, limit: 10_000, mailboxes });
        const seen: string[] = [];
        let afterSeq = 0;
        for (;;) {
          const page = await store.readPage({ workspaceId, afterSeq, limit: 500, mailboxes });
          if (page.count === 0) break;
          const events = JSON.parse(`[${page.bytes}]`) as Array<{ id: string }>;
          assert.equal(events.length, page.count);
          seen.push(...events.map((event) => event.id));
          afterSeq = page.lastSeq!;
        }
        assert.deepEqual(
          seen,
          all.map((row) => (JSON.parse(row.envelope) as { id: string }).id),
          `mailboxes ${mailboxes}`,
        );
      }
    });

    it('pages read at the same time do not mix', { skip: kind !== 'postgres' && 'SQLite reads one page at a time' }, async () => {
      const many = Array.from({ length: 24 }, (_, i) => ({
        workspaceId,
        afterSeq: i * 25,
        limit: 50 + i * 10,
        mailboxes: i % 4 === 0 ? ['mbx_a'] : null,
      }));
      const pages = await Promise.all(many.map((q) => store.readPage(q)));
      for (const [i, q] of many.entries()) await expectPage(store, q, pages[i]!);
    });

    it(
      "a restricted page brings its mailboxes' retention watermark, from one statement",
      { skip: kind !== 'postgres' && 'Postgres reader only' },
      async () => {
        const q = { workspaceId, afterSeq: 10, limit: 50, mailboxes: ['mbx_b', 'mbx_c'] };
        try {
          let before: StoredPage | undefined;
          // A limit of 1 is never read ahead.
          assert.equal(await checkoutsDuring(db, async () => (before = await store.readPage({ ...q, limit: 1 }))), 1);
          assert.equal(before!.prunedThrough, 0, 'nothing pruned yet');
          await db('feed_retention_mailboxes').insert({ workspace_id: workspaceId, mailbox_id: 'mbx_b', pruned_through: 42 });
          await db('feed_retention_mailboxes').insert({ workspace_id: workspaceId, mailbox_id: 'mbx_z', pruned_through: 99 });
          let page: StoredPage | undefined;
          assert.equal(
            await checkoutsDuring(db, async () => (page = await store.readPage({ ...q, limit: 7 }))),
            1,
            'page and watermark in one round trip',
          );
          assert.equal(page!.prunedThrough, 42, "the highest of the key's own mailboxes");
          await expectPage(store, { ...q, limit: 7 }, page!);
          assert.equal(
            (await store.readPage({ ...q, mailboxes: null, limit: 1 })).prunedThrough,
            undefined,
            'unrestricted pages prove themselves',
          );
        } finally {
          await db('feed_retention_mailboxes').where({ workspace_id: workspaceId }).delete();
        }
      },
    );

    it('a failing page read gives its connection back', { skip: kind !== 'postgres' && 'Postgres reader only' }, async () => {
      // More failures than the pool has connections (10): a leaked connection would starve the read that follows.
      for (let i = 0; i < 15; i++) {
        await assert.rejects(
          readPgPage(
            db,
            { text: 'SELECT seq, envelope FROM no_such_table WHERE workspace_id = $1', values: [workspaceId] },
            PAGE_MAX_BYTES,
          ),
          /no_such_table/,
        );
      }
      await expectPage(store, queries()[1]!, await store.readPage(queries()[1]!));
    });

    it('facts: each event’s type and occurred_at, in page order, when asked', async () => {
      for (const q of [queries()[1]!, queries()[3]!]) {
        const page = await store.readPage({ ...q, withFacts: true });
        const events = JSON.parse(`[${page.bytes}]`) as Array<{ type: string; occurred_at: string }>;
        assert.deepEqual(
          page.facts!.types,
          events.map((e) => e.type),
        );
        assert.deepEqual(
          page.facts!.occurredAtMs,
          events.map((e) => Date.parse(e.occurred_at)),
        );
        assert.equal((await store.readPage(q)).facts, undefined);
      }
    });
  });

  describe(`the byte cap on large events (${kind})`, { skip }, () => {
    let db: Db;
    let store: OpenedStore;
    let workspaceId: string;
    const mailboxesOf = (i: number) => `mbx_${i % 4}`;
    suiteDatabase(create, async (opened) => {
      store = opened;
      db = opened.knex;
      workspaceId = (await store.createWorkspace('large', true, Date.now())).id;
      for (let batch = 0; batch < 5; batch++) {
        await db.transaction((trx) =>
          publish(
            trx,
            workspaceId,
            Array.from({ length: 20 }, (_, i) => largeEvent(mailboxesOf(i), batch * 20 + i)),
          ),
        );
      }
      await db.transaction((trx) => publish(trx, workspaceId, [hugeEvent(100, 'mbx_0'), largeEvent('mbx_0', 101)]));
    });

    it('a page of 500 ~62 KB events stops before 1 MiB, and the next page goes on from there', async () => {
      for (const mailboxes of [null, ['mbx_0', 'mbx_2']]) {
        const first = await store.readPage({ workspaceId, afterSeq: 0, limit: 500, mailboxes });
        assert.ok(first.cutAtByteCap, 'cut at the byte cap');
        assert.ok(first.count >= 8 && first.count <= 17, `${first.count} events`);
        await expectPage(store, { workspaceId, afterSeq: 0, limit: 500, mailboxes }, first);
        await expectPage(
          store,
          { workspaceId, afterSeq: first.lastSeq!, limit: 500, mailboxes },
          await store.readPage({ workspaceId, afterSeq: first.lastSeq!, limit: 500, mailboxes }),
        );
      }
    });

    it('an event larger than the cap comes alone, and the page after it goes on', async () => {
      const [huge] = await kindNamed(kind).sql.rows<{ seq: number }>(
        db,
        "SELECT seq FROM events WHERE workspace_id = ? AND envelope LIKE '%r1999@%'",
        [workspaceId],
      );
      for (const mailboxes of [null, ['mbx_0']]) {
        const alone = await store.readPage({ workspaceId, afterSeq: huge!.seq - 1, limit: 500, mailboxes });
        assert.equal(alone.count, 1);
        assert.equal(alone.lastSeq, huge!.seq);
        assert.ok(alone.bytes.length > PAGE_MAX_BYTES, 'the huge event is served whole');
        assert.ok(alone.cutAtByteCap);
        if (mailboxes === null) {
          const before = await store.readPage({ workspaceId, afterSeq: huge!.seq - 3, limit: 500, mailboxes });
          assert.deepEqual(
            [before.count, before.lastSeq, before.cutAtByteCap],
            [2, huge!.seq - 1, true],
            'a page does not take the huge event after others',
          );
        }
        await expectPage(
          store,
          { workspaceId, afterSeq: huge!.seq, limit: 500, mailboxes },
          await store.readPage({ workspaceId, afterSeq: huge!.seq, limit: 500, mailboxes }),
        );
      }
    });

    it(
      'sizing a page reads no envelope, only its length (SQLite: from the record header)',
      { skip: kind !== 'sqlite' && 'SQLite reader only' },
      async () => {
        // A sizing statement that copied the envelopes read 31 MB for a page of 500 events of 62 KB
        // to keep 16 of them (10 ms of the event loop per page). Whether SQLite reads a column's
        // text or only its length shows in the statement's program: a Column instruction flagged
        // OPFLAG_BYTELENARG (0xc0 in p5) takes the length from the record header.
        const conn = sqliteReaderOf(db)!.connection();
        const sizing: string[] = [];
        const prepare = conn.prepare;
        conn.prepare = function (this: typeof conn, sql: string) {
          if (/octet_length/.test(sql) && !/group_concat\((e\.)?envelope/.test(sql)) sizing.push(sql);
          return prepare.call(this, sql);
        } as typeof conn.prepare;
        try {
          for (const mailboxes of [null, ['mbx_0', 'mbx_2']]) await store.readPage({ workspaceId, afterSeq: 0, limit: 500, mailboxes });
        } finally {
          conn.prepare = prepare;
        }
        assert.equal(new Set(sizing).size, 2, 'one sizing statement for the whole feed, one for restricted keys');
        const [table] = await sqliteRows<{ rootpage: number }>(
          db,
          "SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND name = 'events'",
          [],
        );
        const envelope = (await sqliteRows<{ cid: number; name: string }>(db, 'PRAGMA table_info(events)', [])).find(
          (column) => column.name === 'envelope',
        )!.cid;
        for (const sql of new Set(sizing)) {
          const program = conn.prepare(`EXPLAIN ${sql}`).all(...Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 0)) as {
            opcode: string;
            p1: number;
            p2: number;
            p5: number;
          }[];
          const onEvents = new Set(program.filter((op) => op.opcode === 'OpenRead' && op.p2 === table!.rootpage).map((op) => op.p1));
          const reads = program.filter((op) => op.opcode === 'Column' && onEvents.has(op.p1) && op.p2 === envelope);
          assert.ok(reads.length > 0, `the sizing statement reads the envelope's length: ${sql}`);
          for (const read of reads) assert.equal(read.p5 & 0xc0, 0xc0, `the envelope's text is read to size it: ${sql}`);
        }
      },
    );
  });

  describe(`keys restricted to many mailboxes (${kind})`, { skip }, () => {
    let db: Db;
    let store: OpenedStore;
    let workspaceId: string;
    const MAILBOXES = 120;
    suiteDatabase(create, async (opened) => {
      store = opened;
      db = opened.knex;
      workspaceId = (await store.createWorkspace('mailboxes', true, Date.now())).id;
      // Mailboxes of every density: mbx_0 holds half the events, the others share the rest unevenly.
      let n = 0;
      for (let batch = 0; batch < 6; batch++) {
        await db.transaction((trx) =>
          publish(
            trx,
            workspaceId,
            Array.from({ length: 500 }, () => {
              n++;
              const mailbox = n % 2 === 0 ? 'mbx_0' : `mbx_${1 + ((n * 7919) % (n % 3 === 0 ? 7 : MAILBOXES - 1))}`;
              return sampleEvent(n % 97 === 0 ? undefined : mailbox, n);
            }),
          ),
        );
      }
    });

    it('a page for 1, 10, 50 or 100 mailboxes is exactly theirs, in order, from any position and limit', async () => {
      let seed = 42;
      const random = (max: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % max);
      for (const k of [1, 2, 10, 33, 50, 100]) {
        for (let round = 0; round < 4; round++) {
          const mailboxes = [...new Set(Array.from({ length: k }, () => `mbx_${random(MAILBOXES + 5)}`))];
          const q = { workspaceId, afterSeq: random(3000), limit: 1 + random(500), mailboxes };
          await expectPage(store, q, await store.readPage(q));
        }
      }
    });
  });

  describe(`what event_feed concludes from a page (${kind})`, { skip }, () => {
    let db: Db;
    let store: OpenedStore;
    let workspaceId: string;
    const cursors = new CursorCodec('x'.repeat(32));
    // Heads believed as on SQLite while no other process writes: every shortcut open to the reader.
    const context = () => {
      const { heads } = new ChangeWatch({ othersWrites: () => 'fixed' });
      return {
        cursors,
        feed: new FeedReader(store, heads),
        principal: permit({ keyId: 'key', workspaceId, permissions: new Set(['read' as const]), mailboxes: null }, 'read'),
      };
    };
    suiteDatabase(create, async (opened) => {
      store = opened;
      db = opened.knex;
    });
    before(async () => {
      workspaceId = (await store.createWorkspace('conclusions', true, Date.now())).id;
      await db.transaction((trx) =>
        publish(
          trx,
          workspaceId,
          Array.from({ length: 40 }, (_, i) => sampleEvent('mbx_a', i)),
        ),
      );
    });

    it('a page short because retention removed the start of its range teaches no head: the cursor is refused, and later polls still find the events', async () => {
      await storeAt(db, workspaceId, 0, 10);
      await store.pruneAll(PAST_EPOCH_WEEK_MS, 1000);
      const ctx = context();
      // Range (2, 12]: only 11 and 12 are left; an expired cursor, refused.
      await assert.rejects(
        eventFeed(ctx, { after: cursors.encode(workspaceId, 2), limit: 10 }),
        (err) => err instanceof ApiError && /expired/.test(err.message),
      );
      const later = await eventFeed(ctx, { after: cursors.encode(workspaceId, 12), limit: 100 });
      assert.equal(later.events.count, 28, 'events 13..40 after the refused cursor');
    });

    it('a sealed page is answered again from memory, never past a prune, and a page that may still grow is read each time', async () => {
      const ws = (await store.createWorkspace('sealed', true, Date.now())).id;
      await db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 25 }, (_, i) => sampleEvent('mbx_a', i)),
        ),
      );
      await storeAt(db, ws, 0, 10); // old enough to be pruned
      let pageReads = 0;
      const storage: FeedStorage = {
        readPage: (q) => (pageReads++, store.readPage(q)),
        feedHead: (w) => store.feedHead(w),
        prunedThrough: (w) => store.prunedThrough(w),
        prunedThroughMailboxes: (w, m) => store.prunedThroughMailboxes(w, m),
      };
      const sealed = new SealedPages(1 << 20);
      const { heads } = new ChangeWatch({ othersWrites: () => 'fixed' });
      const ctx = {
        ...context(),
        feed: new FeedReader(storage, heads, undefined, undefined, sealed),
        principal: permit({ ...context().principal, workspaceId: ws }, 'read'),
      };
      const read = (afterSeq: number) => eventFeed(ctx, { after: cursors.encode(ws, afterSeq), limit: 10 });

      const first = await read(0);
      const again = await read(0);
      assert.equal(pageReads, 1, 'the whole page (1..10) was kept');
      assert.ok(again.events.bytes.equals(first.events.bytes));
      assert.ok(sealed.bytes > 0);
      // At the head (21..25): short, it may still grow, so it is read each time, and sees what came.
      assert.equal((await read(20)).events.count, 5);
      await db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_a', 99)]));
      assert.equal((await read(20)).events.count, 6);
      assert.equal(pageReads, 3);
      // Retention removed 1..10: the kept page is not served, the cursor is refused as expired.
      await store.pruneAll(PAST_EPOCH_WEEK_MS, 1000);
      await assert.rejects(read(0), (err) => err instanceof ApiError && /expired/.test(err.message));
    });

    it('a page read ahead before a prune is not served after it: the cursor is refused as expired', async () => {
      const ws = (await store.createWorkspace('read-ahead', true, Date.now())).id;
      await db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 30 }, (_, i) => sampleEvent('mbx_a', i)),
        ),
      );
      const ctx = { ...context(), principal: permit({ ...context().principal, workspaceId: ws }, 'read') };
      // Old enough to be pruned (a page of young events is out of every prune's reach: next test).
      await storeAt(db, ws, 0, 15);
      const first = await eventFeed(ctx, { limit: 10 });
      assert.equal(first.events.count, 10);
      await new Promise((resolve) => setTimeout(resolve, 50)); // the next page is read ahead meanwhile
      await store.pruneAll(PAST_EPOCH_WEEK_MS, 1000);
      await assert.rejects(
        eventFeed(ctx, { after: first.next_cursor, limit: 10 }),
        (err) => err instanceof ApiError && /expired/.test(err.message),
      );
    });

    it('a page read ahead whose events are too young for any prune is served without reading the retention watermark', async () => {
      const ws = (await store.createWorkspace('young', true, Date.now())).id;
      await db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 25 }, (_, i) => sampleEvent('mbx_a', i)),
        ),
      );
      const ctx = { ...context(), principal: permit({ ...context().principal, workspaceId: ws }, 'read') };
      const watermarkReads = async (work: () => Promise<unknown>) => {
        if (kind === 'sqlite') return sqliteReadsDuring(db, /feed_retention/, work);
        let reads = 0;
        const count = (query: { sql: string }) => void (/feed_retention/.test(query.sql) && reads++);
        db.on('query', count);
        try {
          await work();
        } finally {
          db.off('query', count);
        }
        return reads;
      };
      const first = await eventFeed(ctx, { after: cursors.encode(ws, 0), limit: 10 });
      await new Promise((resolve) => setTimeout(resolve, 50)); // the next page is read ahead meanwhile
      let second: Awaited<ReturnType<typeof eventFeed>> | undefined;
      assert.equal(await watermarkReads(async () => (second = await eventFeed(ctx, { after: first.next_cursor, limit: 10 }))), 0);
      assert.equal(second!.events.lastSeq, 20);
      // The same page, its events 40 days old: it asks the watermark.
      await storeAt(db, ws, Date.now() - 40 * 24 * 3600 * 1000);
      const again = await eventFeed(ctx, { after: cursors.encode(ws, 0), limit: 10 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(await watermarkReads(() => eventFeed(ctx, { after: again.next_cursor, limit: 10 })), 1);
    });

    it('without a cursor, the page starts at the oldest retained event', async () => {
      const ws = (await store.createWorkspace('oldest', true, Date.now())).id;
      await db.transaction((trx) =>
        publish(
          trx,
          ws,
          Array.from({ length: 30 }, (_, i) => sampleEvent('mbx_a', i)),
        ),
      );
      await storeAt(db, ws, 0, 25);
      await store.pruneAll(PAST_EPOCH_WEEK_MS, 1000);
      const ctx = { ...context(), principal: permit({ ...context().principal, workspaceId: ws }, 'read') };
      const page = await eventFeed(ctx, { limit: 10 });
      assert.equal(page.events.count, 5);
      assert.equal(page.events.lastSeq, 30);
    });
  });
}

const postgres = (await databaseKinds())[1]!;
describe('page plans that cannot sort the rest of the feed (postgres, never analyzed)', { skip: postgres.skip }, () => {
  let db: Db;
  let store: OpenedStore;
  let workspaceId: string;
  const EVENTS = 100_000;
  suiteDatabase(postgres.create, async (opened) => {
    store = opened;
    db = opened.knex;
    // The events spread over the five weeks before now, each week a partition, none analyzed.
    const from = Date.now() - 5 * WEEK_MS;
    for (let week = 0; week <= 5; week++) await new EventPartitions(db).ensureFor(from + week * WEEK_MS);
    for (const { name } of await listPartitions(db)) await db.raw(`ALTER TABLE ${name} SET (autovacuum_enabled = false)`);
    workspaceId = (await store.createWorkspace('unanalyzed', true, Date.now())).id;
    const envelope = JSON.stringify(sampleEvent('mbx_a', 0));
    await db.raw(
      `INSERT INTO events (workspace_id, seq, id, type, mailbox_id, occurred_at_ms, stored_at, envelope)
       SELECT ?, n, 'evt_' || n, 'mail.received', 'mbx_' || (n % 40), 0, ?::bigint + n * ?::bigint, ? FROM generate_series(1, ?) n`,
      [workspaceId, from, Math.floor((5 * WEEK_MS) / EVENTS), envelope, EVENTS],
    );
    await db('feed_counters').where({ workspace_id: workspaceId }).update({ last_seq: EVENTS });
  });

  /** Every plan node's actual row count, from EXPLAIN ANALYZE of the statement the reader runs. */
  async function nodeRows(q: PageQuery): Promise<number[]> {
    const statement = pgPageStatement(q);
    const conn = (await db.client.acquireConnection()) as {
      query(config: { text: string; values: unknown[] }): Promise<{ rows: Array<Record<string, any>> }>;
    };
    try {
      const { rows } = await conn.query({ text: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, values: statement.values });
      const counts: number[] = [];
      const walk = (node: any) => {
        counts.push(node['Actual Rows'] * node['Actual Loops']);
        for (const child of node.Plans ?? []) walk(child);
      };
      walk(rows[0]!['QUERY PLAN'][0].Plan);
      return counts;
    } finally {
      await db.client.releaseConnection(conn);
    }
  }

  it('the service keeps one plan per named statement (a restricted page is not planned again at every run)', async () => {
    const [setting] = await postgresRows<{ plan_cache_mode: string }>(db, 'SHOW plan_cache_mode', []);
    assert.equal(setting!.plan_cache_mode, 'force_generic_plan');
  });

  it('the table has no statistics, over several partitions', async () => {
    const stats = await postgresRows<{ last_analyze: unknown; last_autoanalyze: unknown }>(
      db,
      "SELECT last_analyze, last_autoanalyze FROM pg_stat_user_tables WHERE relname LIKE 'events_w%'",
      [],
    );
    assert.ok(stats.length >= 5, `${stats.length} partitions`);
    for (const row of stats) assert.deepEqual(row, { last_analyze: null, last_autoanalyze: null });
  });

  it('no plan node handles more rows than the page needs, in the middle of the feed', async () => {
    for (const q of [
      { workspaceId, afterSeq: EVENTS / 2, limit: 500, mailboxes: null },
      { workspaceId, afterSeq: EVENTS / 2, limit: 100, mailboxes: ['mbx_3'] },
      { workspaceId, afterSeq: EVENTS / 2, limit: 500, mailboxes: ['mbx_3', 'mbx_7'] },
      { workspaceId, afterSeq: EVENTS / 2, limit: 200, mailboxes: Array.from({ length: 35 }, (_, i) => `mbx_${i}`) },
    ]) {
      const most = Math.max(...(await nodeRows(q)));
      assert.ok(
        most <= q.limit * (q.mailboxes?.length ?? 1) + 1,
        `a node handled ${most} rows for a page of ${q.limit} (${q.mailboxes?.length ?? 'all'} mailboxes)`,
      );
    }
  });
});
