/**
 * Gap-free ordering on Postgres (see src/store/common/events.ts and ../shared/notes/ordering.md).
 *
 * 1. A deterministic interleaving through the real append path (publishInTransaction) and the real
 *    read path (eventFeed + CursorCodec): A appends and holds its transaction, B appends and
 *    commits, the reader polls, A commits. The reader must get A's event, then B's.
 * 2. The same script on the naive scheme (bigserial id, `WHERE id > cursor`) must lose A's event:
 *    the negative control showing this test catches the bug it is about.
 * 3. A rollback case and a short randomized run (8 writers, 2 workspaces, 2 tailing readers).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Knex } from 'knex';
import type { EmitEventRequest } from '../generated/types.ts';
import { CursorCodec } from '../src/feed/cursor.ts';
import { ChangeWatch } from '../src/feed/change-watch.ts';
import { pageEnvelopes } from '../src/feed/page.ts';
import { publishInTransaction } from '../src/feed/publish.ts';
import { FeedReader } from '../src/feed/reader.ts';
import { permit } from '../src/auth/principal.ts';
import { eventFeed } from '../src/operations/event-feed.ts';
import { openStore, type OpenedStore } from '../src/store/open-store.ts';
import { sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';

const codec = new CursorCodec('ordering-test-secret-0123456789abcdef');

/** A promise plus whether it has settled yet, to assert "still blocked". */
function track<T>(promise: Promise<T>) {
  const state = { settled: false, promise };
  promise.then(
    () => (state.settled = true),
    () => (state.settled = true),
  );
  return state;
}

function event(n: number): EmitEventRequest {
  return sampleEvent('mbx_sales', n) as EmitEventRequest;
}

const idOf = (envelope: string) => (JSON.parse(envelope) as { id: string }).id;

/** How one feed implementation appends and reads; the interleaving script is the same for both. */
interface Scheme {
  name: string;
  /** Appends one event inside trx; returns its id. */
  append(trx: Knex.Transaction, workspaceId: string, n: number): Promise<string>;
  /** One page after a saved cursor (undefined: from the start). */
  read(reader: OpenedStore, workspaceId: string, cursor: string | undefined): Promise<{ ids: string[]; cursor: string }>;
  /** Every committed event id of the workspace in feed order (the truth, read behind the reader's back). */
  committed(reader: OpenedStore, workspaceId: string): Promise<string[]>;
}

const realScheme: Scheme = {
  name: 'feed_counters (src)',
  async append(trx, workspaceId, n) {
    const [published] = await publishInTransaction(trx, workspaceId, [event(n)], new Date());
    return idOf(published!.envelope);
  },
  async read(reader, workspaceId, cursor) {
    const page = await eventFeed(
      {
        cursors: codec,
        feed: new FeedReader(reader, new ChangeWatch().heads),
        principal: permit({ keyId: 'key_test', workspaceId, permissions: new Set(['read']), mailboxes: null }, 'read'),
      },
      cursor === undefined ? { limit: 100 } : { after: cursor, limit: 100 },
    );
    return { ids: pageEnvelopes(page.events).map((e) => e.id), cursor: page.next_cursor };
  },
  async committed(reader, workspaceId) {
    const rows: Array<{ id: string }> = await reader.knex('events').select('id').where({ workspace_id: workspaceId }).orderBy('seq');
    return rows.map((row) => row.id);
  },
};

const naiveScheme: Scheme = {
  name: 'naive bigserial',
  async append(trx, workspaceId, n) {
    const id = `naive_${n}_${Math.random().toString(36).slice(2, 8)}`;
    await trx('naive_events').insert({ workspace_id: workspaceId, event_id: id });
    return id;
  },
  async read(reader, workspaceId, cursor) {
    const after = cursor === undefined ? 0 : Number(cursor);
    const rows: Array<{ id: number | string; event_id: string }> = await reader
      .knex('naive_events')
      .select('id', 'event_id')
      .where('workspace_id', workspaceId)
      .andWhere('id', '>', after)
      .orderBy('id')
      .limit(100);
    return { ids: rows.map((row) => row.event_id), cursor: String(rows.length ? Number(rows.at(-1)!.id) : after) };
  },
  async committed(reader, workspaceId) {
    const rows: Array<{ event_id: string }> = await reader
      .knex('naive_events')
      .select('event_id')
      .where({ workspace_id: workspaceId })
      .orderBy('id');
    return rows.map((row) => row.event_id);
  },
};

interface InterleavingOutcome {
  ids: { e0: string; a: string; b: string };
  /** Whether B's append+commit had finished 300 ms after it started, while A still held its transaction. */
  bFinishedWhileAHeld: boolean;
  /** Backends of the test database waiting on a lock at that moment. */
  lockWaitersWhileAHeld: number;
  /** What the reader got while A held its transaction (after having read E0). */
  pollWhileAHeld: string[];
  /** What the reader got, continuing from its saved cursor, once A and B had both committed. */
  pollAfterCommits: string[];
  /** Everything the reader was ever given, in order. */
  seen: string[];
  committed: string[];
}

/**
 * The script: E0 committed; the reader reads it and saves its cursor; A appends and holds; B (other
 * connection) appends and commits; 300 ms later the reader polls from its cursor; A commits; B's
 * commit is awaited; the reader polls again from its saved cursor.
 */
async function runInterleaving(
  scheme: Scheme,
  dbA: Knex,
  dbB: Knex,
  reader: OpenedStore,
  workspaceId: string,
): Promise<InterleavingOutcome> {
  const e0 = await dbA.transaction((trx) => scheme.append(trx, workspaceId, 0));
  const seen: string[] = [];
  const first = await scheme.read(reader, workspaceId, undefined);
  seen.push(...first.ids);
  let cursor = first.cursor;

  const trxA = await dbA.transaction();
  let b: ReturnType<typeof track<string>> | undefined;
  try {
    const a = await scheme.append(trxA, workspaceId, 1);
    b = track(dbB.transaction((trx) => scheme.append(trx, workspaceId, 2)));
    await sleep(300);
    const bFinishedWhileAHeld = b.settled;
    const waiters = await reader.knex.raw(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
    );
    const lockWaitersWhileAHeld = Number(waiters.rows[0].n);

    const whileHeld = await scheme.read(reader, workspaceId, cursor);
    seen.push(...whileHeld.ids);
    cursor = whileHeld.cursor;

    await trxA.commit();
    const bId = await b.promise;

    const afterCommits = await scheme.read(reader, workspaceId, cursor);
    seen.push(...afterCommits.ids);
    return {
      ids: { e0, a, b: bId },
      bFinishedWhileAHeld,
      lockWaitersWhileAHeld,
      pollWhileAHeld: whileHeld.ids,
      pollAfterCommits: afterCommits.ids,
      seen,
      committed: await scheme.committed(reader, workspaceId),
    };
  } finally {
    if (!trxA.isCompleted()) await trxA.rollback();
    await b?.promise.catch(() => undefined);
  }
}

/** The property under test: the reader got every committed event, once, in feed order. */
function assertReaderSawEverything(outcome: InterleavingOutcome): void {
  assert.deepEqual(outcome.seen, outcome.committed, 'the reader must see every committed event exactly once, in order');
}

describe('gap-free ordering on postgres', { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' }, () => {
  let database: TestDatabase;
  let storeA: OpenedStore;
  let storeB: OpenedStore;
  let storeReader: OpenedStore;
  let dbA: Knex;
  let dbB: Knex;
  let dbReader: Knex;

  before(async () => {
    database = await postgresDatabase();
    storeA = openStore(database.url);
    storeB = openStore(database.url);
    storeReader = openStore(database.url);
    [dbA, dbB, dbReader] = [storeA.knex, storeB.knex, storeReader.knex];
    await storeA.migrate();
    await dbA.schema.createTable('naive_events', (t) => {
      t.bigIncrements('id'); // bigserial: ids handed out at insert time, never rolled back
      t.text('workspace_id').notNullable();
      t.text('event_id').notNullable();
    });
  });
  after(async () => {
    await Promise.all([storeA?.close(), storeB?.close(), storeReader?.close()]);
    await database?.drop();
  });

  const newWorkspace = async (name: string) => (await storeA.createWorkspace(name, false, Date.now())).id;

  it('a writer that commits late is still read: B waits for A, the reader gets A then B', async () => {
    const ws = await newWorkspace('interleaving');
    const outcome = await runInterleaving(realScheme, dbA, dbB, storeReader, ws);

    assert.equal(outcome.bFinishedWhileAHeld, false, "B's append must block while A holds its transaction");
    assert.equal(outcome.lockWaitersWhileAHeld, 1, 'B must be waiting on a lock (the feed counter row)');
    assert.deepEqual(outcome.pollWhileAHeld, [], 'while A holds its transaction nothing beyond E0 is committed');
    assert.deepEqual(outcome.pollAfterCommits, [outcome.ids.a, outcome.ids.b]);
    assert.deepEqual(outcome.seen, [outcome.ids.e0, outcome.ids.a, outcome.ids.b]);
    assertReaderSawEverything(outcome);

    const rows = await dbReader('events').select('seq', 'id').where({ workspace_id: ws }).orderBy('seq');
    assert.deepEqual(rows, [
      { seq: 1, id: outcome.ids.e0 },
      { seq: 2, id: outcome.ids.a },
      { seq: 3, id: outcome.ids.b },
    ]);
    const counter = await dbReader('feed_counters').where({ workspace_id: ws }).first();
    assert.equal(Number(counter.last_seq), 3);
  });

  it('seq values follow commit order: between A committing and B committing the reader gets A alone', async () => {
    const ws = await newWorkspace('intermediate');
    const reader = async (cursor?: string) => realScheme.read(storeReader, ws, cursor);
    const start = await reader();
    assert.deepEqual(start.ids, []);
    assert.equal(codec.decode(ws, start.cursor), 0);

    const trxA = await dbA.transaction();
    const trxB = await dbB.transaction();
    try {
      const a = await realScheme.append(trxA, ws, 1);
      const bAppend = track(realScheme.append(trxB, ws, 2));
      await sleep(300);
      assert.equal(bAppend.settled, false, "B's append must wait for A's transaction");
      const held = await reader(start.cursor);
      assert.deepEqual(held.ids, []);
      assert.equal(held.cursor, start.cursor, 'an empty page echoes the saved cursor');

      await trxA.commit();
      const b = await bAppend.promise; // B now holds the counter, not yet committed
      const afterA = await reader(held.cursor);
      assert.deepEqual(afterA.ids, [a]);
      assert.equal(codec.decode(ws, afterA.cursor), 1);

      await trxB.commit();
      const afterB = await reader(afterA.cursor);
      assert.deepEqual(afterB.ids, [b]);
      assert.equal(codec.decode(ws, afterB.cursor), 2);
      assert.deepEqual((await reader(start.cursor)).ids, [a, b], 're-reading from the first saved cursor gives both, in order');
    } finally {
      if (!trxA.isCompleted()) await trxA.rollback();
      if (!trxB.isCompleted()) await trxB.rollback();
    }
  });

  it('NEGATIVE CONTROL: the naive bigserial scheme loses A under the very same interleaving', async () => {
    const ws = await newWorkspace('naive');
    const outcome = await runInterleaving(naiveScheme, dbA, dbB, storeReader, ws);

    // The naive scheme does not serialize writers: B commits while A still holds its id...
    assert.equal(outcome.bFinishedWhileAHeld, true);
    assert.equal(outcome.lockWaitersWhileAHeld, 0);
    // ...the reader reads past B's id, which is above A's uncommitted one...
    assert.deepEqual(outcome.pollWhileAHeld, [outcome.ids.b]);
    // ...and once A commits, it lands below the reader's cursor: lost for good.
    assert.deepEqual(outcome.pollAfterCommits, []);
    assert.deepEqual(outcome.committed, [outcome.ids.e0, outcome.ids.a, outcome.ids.b]);
    assert.deepEqual(outcome.seen, [outcome.ids.e0, outcome.ids.b]);
    assert.ok(!outcome.seen.includes(outcome.ids.a), "the naive reader misses A's event");
    // The very check that passes on the real scheme fails here: the test can catch the bug.
    assert.throws(() => assertReaderSawEverything(outcome), assert.AssertionError);
  });

  it('a rolled-back writer leaves no hole: B gets the seq A would have had, the reader sees B only', async () => {
    const ws = await newWorkspace('rollback');
    const start = await realScheme.read(storeReader, ws, undefined);
    const trxA = await dbA.transaction();
    let b: ReturnType<typeof track<string>> | undefined;
    try {
      const a = await realScheme.append(trxA, ws, 1);
      b = track(dbB.transaction((trx) => realScheme.append(trx, ws, 2)));
      await sleep(300);
      assert.equal(b.settled, false, 'B must wait for A even though A will roll back');
      assert.deepEqual((await realScheme.read(storeReader, ws, start.cursor)).ids, []);

      await trxA.rollback();
      const bId = await b.promise;

      const page = await realScheme.read(storeReader, ws, start.cursor);
      assert.deepEqual(page.ids, [bId]);
      assert.ok(!page.ids.includes(a));
      assert.equal(codec.decode(ws, page.cursor), 1, 'B gets seq 1, the seq A would have had');
      const rows = await dbReader('events').select('seq', 'id').where({ workspace_id: ws }).orderBy('seq');
      assert.deepEqual(rows, [{ seq: 1, id: bId }]);
      const counter = await dbReader('feed_counters').where({ workspace_id: ws }).first();
      assert.equal(Number(counter.last_seq), 1);
    } finally {
      if (!trxA.isCompleted()) await trxA.rollback();
      await b?.promise.catch(() => undefined);
    }
  });

  it('randomized: 8 writers (pauses, ~10% rollbacks, 1–5 events) over 2 workspaces, 2 tailing readers', async () => {
    const workspaces = [await newWorkspace('random 1'), await newWorkspace('random 2')];
    const RUN_MS = 3000;
    const deadline = Date.now() + RUN_MS;
    const rand = (n: number) => Math.floor(Math.random() * n);

    // Writer-side truth, independent of the database: what each writer saw commit or roll back.
    const committedTx: Array<{ ws: string; ids: string[] }> = [];
    const rolledBack = new Set<string>();
    let n = 0;

    const writer = async () => {
      while (Date.now() < deadline) {
        const ws = workspaces[rand(workspaces.length)]!;
        const trx = await dbA.transaction();
        try {
          await sleep(rand(8));
          const count = 1 + rand(5);
          const published = await publishInTransaction(
            trx,
            ws,
            Array.from({ length: count }, () => event(n++)),
            new Date(),
          );
          const ids = published.map((p) => idOf(p.envelope));
          await sleep(rand(8)); // holding the counter row lock
          if (Math.random() < 0.1) {
            await trx.rollback();
            ids.forEach((id) => rolledBack.add(id));
          } else {
            await trx.commit();
            committedTx.push({ ws, ids });
          }
        } finally {
          if (!trx.isCompleted()) await trx.rollback();
        }
      }
    };

    let writersDone = false;
    const reader = async () => {
      const seen = new Map<string, Array<{ seq: number; id: string }>>(workspaces.map((ws) => [ws, []]));
      const cursors = new Map<string, number>(workspaces.map((ws) => [ws, 0]));
      const drained = new Set<string>();
      while (drained.size < workspaces.length) {
        const ws = workspaces[rand(workspaces.length)]!;
        const finalPass = writersDone;
        const rows = await storeReader.readPageRows({ workspaceId: ws, afterSeq: cursors.get(ws)!, limit: 1 + rand(20), mailboxes: null });
        for (const row of rows) seen.get(ws)!.push({ seq: Number(row.seq), id: idOf(row.envelope) });
        if (rows.length) cursors.set(ws, Number(rows.at(-1)!.seq));
        if (finalPass && rows.length === 0) drained.add(ws);
        if (!finalPass) await sleep(rand(4));
      }
      return seen;
    };

    const readers = [reader(), reader()];
    const writes = await Promise.allSettled(Array.from({ length: 8 }, writer));
    writersDone = true; // let the readers drain and stop even when a writer failed
    const results = await Promise.all(readers);
    for (const write of writes) if (write.status === 'rejected') throw write.reason;

    // The run exercised what it claims to.
    assert.ok(committedTx.length >= 50, `only ${committedTx.length} committed transactions`);
    assert.ok(rolledBack.size > 0, 'no rollback happened');

    for (const ws of workspaces) {
      const txs = committedTx.filter((tx) => tx.ws === ws);
      const expectedIds = new Set(txs.flatMap((tx) => tx.ids));
      const truth = await dbReader('events').select('seq', 'id').where({ workspace_id: ws }).orderBy('seq');
      // The stored feed: exactly the committed events, seq 1..N with no hole.
      assert.deepEqual(
        truth.map((row) => Number(row.seq)),
        Array.from({ length: truth.length }, (_, i) => i + 1),
      );
      assert.deepEqual(new Set(truth.map((row) => row.id as string)), expectedIds);
      const seqOf = new Map(truth.map((row) => [row.id as string, Number(row.seq)]));
      // Each transaction's events are consecutive, in the order given.
      for (const tx of txs) {
        const seqs = tx.ids.map((id) => seqOf.get(id)!);
        assert.deepEqual(
          seqs,
          seqs.map((_, i) => seqs[0]! + i),
        );
      }

      for (const seen of results) {
        const got = seen.get(ws)!;
        assert.deepEqual(
          got.map((e) => e.seq),
          Array.from({ length: expectedIds.size }, (_, i) => i + 1),
          'contiguous from 1, each once',
        );
        assert.deepEqual(
          got,
          truth.map((row) => ({ seq: Number(row.seq), id: row.id as string })),
        );
        assert.equal(got.filter((e) => rolledBack.has(e.id)).length, 0, 'no rolled-back event');
      }
    }
  });
});
