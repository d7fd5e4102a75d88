/**
 * The in-process library (src/library.ts): `publish(trx, workspaceId, events)` appends inside the
 * caller's knex transaction, so events commit or vanish with the caller's own writes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiError, migrateLatest, openDatabase, publish } from '../src/library.ts';
import type { Knex as Db } from 'knex';
import { openStore } from '../src/store/open-store.ts';
import type { Store } from '../src/store/port.ts';
import { sampleEvent } from './support/contract.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';

const clockAt = (iso: string) => ({ now: () => new Date(iso) });
const envelope = (text: string) =>
  JSON.parse(text) as { id: string; subject: { refs: { message_id?: string; mailbox_id?: string } }; occurred_at: string; account: string };

function isApiError(code: string, messageStart: string) {
  return (err: unknown) => {
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
    assert.equal(err.code, code);
    assert.ok(
      err.message.startsWith(messageStart),
      `message ${JSON.stringify(err.message)} should start with ${JSON.stringify(messageStart)}`,
    );
    return true;
  };
}

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`library publish on ${kind}`, { skip: skip && 'Postgres unreachable (see notice above)' }, () => {
    let database: TestDatabase;
    let db: Db;
    /** The service's view of the same database, to provision and to read the feed as it does. */
    let store: Store;
    let scratch = 0;

    before(async () => {
      database = await create();
      db = openDatabase(database.url);
      await migrateLatest(db);
      store = openStore(database.url);
    });
    after(async () => {
      await db?.destroy();
      await store?.close();
      await database?.drop();
    });

    const newWorkspace = async () => (await store.createWorkspace('library test', false, Date.now())).id;
    const feed = async (ws: string) => store.readPageRows({ workspaceId: ws, afterSeq: 0, limit: 500, mailboxes: null });
    const counter = async (ws: string) => Number((await db('feed_counters').where({ workspace_id: ws }).first()).last_seq);
    /** A table of the caller's own, to show its writes and the events commit (or not) together. */
    const scratchTable = async () => {
      const name = `orders_${kind}_${++scratch}`;
      await db.schema.createTable(name, (t) => {
        t.text('id').primary();
        t.text('workspace_id').notNullable();
      });
      return name;
    };

    it("rolls back with the caller's transaction: no event, counter unchanged, the next event gets seq 1", async () => {
      const ws = await newWorkspace();
      const orders = await scratchTable();
      await assert.rejects(
        db.transaction(async (trx) => {
          await trx(orders).insert({ id: 'o_1', workspace_id: ws });
          const published = await publish(trx, ws, [sampleEvent('mbx_sales', 1), sampleEvent('mbx_sales', 2)]);
          assert.equal(published.length, 2);
          assert.ok(published.every((p) => p.created));
          throw new Error('the caller changes its mind');
        }),
        /the caller changes its mind/,
      );
      assert.deepEqual(await feed(ws), []);
      assert.equal(await counter(ws), 0);
      assert.deepEqual(await db(orders).select('id'), []);
      assert.equal(Number((await db('events').where({ workspace_id: ws }).count({ n: '*' }).first())!.n), 0);

      const [next] = await db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_sales', 3)]));
      const page = await feed(ws);
      assert.deepEqual(
        page.map((row) => Number(row.seq)),
        [1],
        'no hole where the rolled-back events were',
      );
      assert.equal(page[0]!.envelope, next!.envelope);
      assert.equal(await counter(ws), 1);
    });

    it("commits with the caller's own writes, events in the order given", async () => {
      const ws = await newWorkspace();
      const orders = await scratchTable();
      const published = await db.transaction(async (trx) => {
        await trx(orders).insert({ id: 'o_1', workspace_id: ws });
        const result = await publish(trx, ws, [sampleEvent('mbx_sales', 1), sampleEvent('mbx_support', 2), sampleEvent('mbx_sales', 3)]);
        await trx(orders).insert({ id: 'o_2', workspace_id: ws });
        // Inside the transaction the caller sees its events; other connections do not, yet (Postgres:
        // on SQLite the pool's one connection is this transaction's).
        assert.equal(Number((await trx('events').where({ workspace_id: ws }).count({ n: '*' }).first())?.n), 3);
        if (kind === 'postgres') assert.deepEqual(await feed(ws), []);
        return result;
      });
      assert.deepEqual(
        (await db(orders).select('id').orderBy('id')).map((r) => r.id),
        ['o_1', 'o_2'],
      );
      const page = await feed(ws);
      assert.deepEqual(
        page.map((row) => Number(row.seq)),
        [1, 2, 3],
      );
      assert.deepEqual(
        page.map((row) => row.envelope),
        published.map((p) => p.envelope),
        'stored text is what publish returned',
      );
      assert.deepEqual(
        page.map((row) => envelope(row.envelope).subject.refs.message_id),
        ['msg_1', 'msg_2', 'msg_3'],
      );
      assert.deepEqual(
        page.map((row) => envelope(row.envelope).subject.refs.mailbox_id),
        ['mbx_sales', 'mbx_support', 'mbx_sales'],
      );
      assert.ok(page.every((row) => envelope(row.envelope).account === ws));
      assert.ok(published.every((p) => p.created));
      assert.equal(await counter(ws), 3);

      // A second call appends after them.
      await db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_sales', 4)]));
      assert.deepEqual(
        (await feed(ws)).map((row) => Number(row.seq)),
        [1, 2, 3, 4],
      );
    });

    it('refuses invalid events with invalid_argument "events[<index>]: …" and publishes none of the call', async () => {
      const ws = await newWorkspace();
      const badType = { ...sampleEvent('mbx_sales', 1), type: 'mail.teleported' };
      const extraField = { ...sampleEvent('mbx_sales', 2), unexpected: true };
      const { data: _dropped, ...noData } = sampleEvent('mbx_sales', 3);
      const badId = { ...sampleEvent('mbx_sales', 4), id: 'evt_not-a-ulid' };

      const cases: Array<[unknown[], string]> = [
        [[badType], 'events[0]: '],
        [[sampleEvent('mbx_sales', 0), extraField], 'events[1]: '],
        [[sampleEvent('mbx_sales', 0), sampleEvent('mbx_sales', 1), noData], 'events[2]: '],
        [[badId], 'events[0]: '],
        [[sampleEvent('mbx_sales', 0), null], 'events[1]: '],
        [['not an object'], 'events[0]: '],
      ];
      for (const [events, start] of cases) {
        await assert.rejects(
          db.transaction((trx) => publish(trx, ws, events)),
          isApiError('invalid_argument', start),
        );
      }
      assert.deepEqual(await feed(ws), []);
      assert.equal(await counter(ws), 0);
    });

    it('the error message after the index says what is wrong', async () => {
      const ws = await newWorkspace();
      const err = await db.transaction((trx) => publish(trx, ws, [{ ...sampleEvent(), unexpected: true }])).catch((e) => e);
      assert.ok(err instanceof ApiError);
      assert.match(err.message, /^events\[0\]: .*unexpected/);
    });

    it('a client-supplied id replayed with the same content returns created:false and the stored envelope', async () => {
      const ws = await newWorkspace();
      const id = 'evt_01J9ZZZZZZZZZZZZZZZZZZZZZZ';
      const input = { ...sampleEvent('mbx_sales', 7), id };
      // No occurred_at: the server fills it from the clock; the replay, later, must still get the stored one.
      const [first] = await db.transaction((trx) => publish(trx, ws, [input], clockAt('2026-01-02T03:04:05.678Z')));
      assert.equal(first!.created, true);
      assert.equal(envelope(first!.envelope).id, id);
      assert.equal(envelope(first!.envelope).occurred_at, '2026-01-02T03:04:05.678Z');

      const [replay] = await db.transaction((trx) => publish(trx, ws, [structuredClone(input)], clockAt('2026-05-06T07:08:09.000Z')));
      assert.deepEqual(replay, { envelope: first!.envelope, created: false });
      assert.equal((await feed(ws)).length, 1);
      assert.equal(await counter(ws), 1);

      // Mixed with a new event: the replay is not appended again, the new one takes seq 2.
      const mixed = await db.transaction((trx) => publish(trx, ws, [sampleEvent('mbx_sales', 8), input]));
      assert.deepEqual(
        mixed.map((p) => p.created),
        [true, false],
      );
      assert.equal(mixed[1]!.envelope, first!.envelope);
      const page = await feed(ws);
      assert.deepEqual(
        page.map((row) => [Number(row.seq), row.envelope]),
        [
          [1, first!.envelope],
          [2, mixed[0]!.envelope],
        ],
      );

      // The stored event's own fields (occurred_at included, keys in another order) are the same event too.
      const { type, subject, data, occurred_at } = JSON.parse(first!.envelope);
      const [asStored] = await db.transaction((trx) => publish(trx, ws, [{ data, occurred_at, subject, type, id }]));
      assert.deepEqual(asStored, { envelope: first!.envelope, created: false });
      await assert.rejects(
        db.transaction((trx) => publish(trx, ws, [{ data, occurred_at: '2026-01-02T03:04:05.679Z', subject, type, id }])),
        isApiError('invalid_argument', `event id ${id} was already used`),
      );

      // Same id, other content: refused, nothing appended.
      await assert.rejects(
        db.transaction((trx) => publish(trx, ws, [{ ...sampleEvent('mbx_sales', 9), id }])),
        isApiError('invalid_argument', `event id ${id} was already used`),
      );
      // Same id twice in one call: refused.
      const other = 'evt_01J9YYYYYYYYYYYYYYYYYYYYYY';
      await assert.rejects(
        db.transaction((trx) =>
          publish(trx, ws, [
            { ...sampleEvent(), id: other },
            { ...sampleEvent(), id: other },
          ]),
        ),
        isApiError('invalid_argument', 'the same event id appears twice'),
      );
      assert.equal(await counter(ws), 2);
    });

    it('the same event published by two transactions at once: one stores it, the other replays it', async () => {
      const ws = await newWorkspace();
      const event = { ...sampleEvent('mbx_sales', 10), id: 'evt_01J9XXXXXXXXXXXXXXXXXXXXXX' };
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const first = db.transaction(async (trx) => {
        const published = await publish(trx, ws, [event]);
        await held; // still open while the second publishes
        return published;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const second = db
        .transaction((trx) => publish(trx, ws, [event]))
        .then(
          (published) => ({ published }),
          (err: unknown) => ({ err }),
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
      release();
      const [stored] = await first;
      assert.equal(stored!.created, true);
      const outcome = await second;
      // SQLite: one writer, the second transaction ran after the first committed. Postgres: the
      // second took the workspace's counter before looking the id up, so it waited for the first.
      assert.deepEqual(outcome, { published: [{ envelope: stored!.envelope, created: false }] });
      assert.equal(await counter(ws), 1);
    });
  });
}
