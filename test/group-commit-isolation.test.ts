/**
 * The group commit keeps workspaces apart on Postgres (feed/group-commit.ts):
 * - a workspace whose counter row another transaction holds is skipped by the shared statement;
 *   every other workspace of the batch is stored at once, the skipped one's events once the row is
 *   free, in arrival order, with seqs that run on without a hole;
 * - workspaces found locked wait in lanes of their own, never in the shared slots: with more of
 *   them than lanes, another workspace is still stored at once; a lane's wait ends at lock_timeout
 *   with a true "not stored", and the workspace is back in the shared statements afterwards;
 * - the process does not contend with itself: two of its statements in flight carry the same
 *   workspace only once the first is older than SAME_WORKSPACE_PATIENCE_MS.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import { after, before, describe, it } from 'node:test';
import type { EmitEventRequest } from '../generated/types.ts';
import { systemClock } from '../src/base/clock.ts';
import { ApiError } from '../src/base/errors.ts';
import { GroupCommit, SAME_WORKSPACE_PATIENCE_MS } from '../src/feed/group-commit.ts';
import { openStore, type OpenedStore } from '../src/store/open-store.ts';
import { LOCK_TIMEOUT_MS } from '../src/store/postgres/timeouts.ts';
import { sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, type TestDatabase } from './support/databases.ts';

const emitRequest = (n: number) => sampleEvent('mbx_sales', n) as EmitEventRequest;
const idOf = (envelope: string) => (JSON.parse(envelope) as { id: string }).id;

describe('group commit isolation (postgres)', { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' }, () => {
  let database: TestDatabase;
  let db: OpenedStore;
  /** Another connection, for the transactions that hold counter rows: an application, another instance. */
  let other: OpenedStore;
  before(async () => {
    database = await postgresDatabase();
    db = openStore(database.url);
    other = openStore(database.url);
    await db.migrate();
  });
  after(async () => {
    await db?.close();
    await other?.close();
    await database?.drop();
  });

  const workspace = async (name: string) => (await db.createWorkspace(name, true, Date.now())).id;
  const feed = async (ws: string) => db.readPageRows({ workspaceId: ws, afterSeq: 0, limit: 500, mailboxes: null });

  /** A transaction of another connection holding these workspaces' counter rows until `release()`. */
  async function holdCounters(workspaces: string[]): Promise<{ release(): Promise<void> }> {
    const trx: Knex.Transaction = await other.knex.transaction();
    await trx.raw('SELECT 1 FROM feed_counters WHERE workspace_id = ANY(?) ORDER BY workspace_id FOR UPDATE', [workspaces]);
    return { release: async () => void (await trx.commit()) };
  }

  /** Whether the promise settled by now. */
  async function settled(promise: Promise<unknown>): Promise<boolean> {
    const marker = Symbol('pending');
    return (
      (await Promise.race([
        promise.then(
          () => true,
          () => true,
        ),
        sleep(0).then(() => marker),
      ])) !== marker
    );
  }

  it("skips a workspace whose counter row another transaction holds: the batch's other workspaces are stored at once, the skipped one's events in arrival order once the row is free", async () => {
    const [a, b] = [await workspace('held'), await workspace('free')];
    const groupCommit = new GroupCommit(db, systemClock);
    await groupCommit.append(a, emitRequest(0)); // seq 1, before the hold
    const held = await holdCounters([a]);
    // One turn of the event loop: the same batch.
    const calls = [a, b, a, b, a, b].map((ws, n) => ({ ws, promise: groupCommit.append(ws, emitRequest(n + 1)) }));
    try {
      const stored = await Promise.all(calls.filter((c) => c.ws === b).map((c) => c.promise));
      assert.deepEqual(
        (await feed(b)).map((row) => idOf(row.envelope)),
        stored.map((p) => idOf(p.envelope)),
        "B's events, stored while A's row is held",
      );
      for (const call of calls.filter((c) => c.ws === a)) assert.equal(await settled(call.promise), false, "A's events wait for A's row");
    } finally {
      await held.release();
    }
    const published = await Promise.all(calls.filter((c) => c.ws === a).map((c) => c.promise));
    const rows = await feed(a);
    assert.deepEqual(
      rows.map((row) => Number(row.seq)),
      [1, 2, 3, 4],
      'seqs without a hole',
    );
    assert.deepEqual(
      rows.slice(1).map((row) => idOf(row.envelope)),
      published.map((p) => idOf(p.envelope)),
      'in arrival order',
    );
    // The lane is closed once empty: A is back in the shared statements.
    const next = await groupCommit.append(a, emitRequest(9));
    assert.equal(idOf((await feed(a)).at(-1)!.envelope), idOf(next.envelope));
  });

  it('locked workspaces wait in lanes of their own, never in the shared slots: with more of them than lanes, another workspace is stored at once; a lane gives up at lock_timeout with a true "not stored"', async () => {
    const locked = [await workspace('locked-1'), await workspace('locked-2'), await workspace('locked-3')];
    const free = await workspace('free');
    const groupCommit = new GroupCommit(db, systemClock);
    const held = await holdCounters(locked);
    const started = Date.now();
    const waiting = locked.flatMap((ws, n) => [groupCommit.append(ws, emitRequest(n)), groupCommit.append(ws, emitRequest(n + 10))]);
    let outcomes: Array<PromiseSettledResult<unknown>>;
    try {
      // Batches of the free workspace, one after another, while the locked ones wait.
      const freeStored: string[] = [];
      for (let n = 0; n < 5; n++) freeStored.push(idOf((await groupCommit.append(free, emitRequest(100 + n))).envelope));
      assert.ok(
        Date.now() - started < LOCK_TIMEOUT_MS,
        `the free workspace's five batches were stored while the others waited (${Date.now() - started} ms)`,
      );
      assert.deepEqual(
        (await feed(free)).map((row) => idOf(row.envelope)),
        freeStored,
      );
      outcomes = await Promise.allSettled(waiting);
    } finally {
      await held.release();
    }
    for (const outcome of outcomes) {
      assert.equal(outcome.status, 'rejected', 'a row held longer than lock_timeout fails the events waiting for it');
      const err = (outcome as PromiseRejectedResult).reason;
      assert.ok(err instanceof ApiError && err.code === 'internal', String(err));
      assert.match(err.message, /^the event was not stored: another transaction held the workspace's feed for more than \d+ s/);
    }
    for (const ws of locked) assert.deepEqual(await feed(ws), [], 'answered "not stored": nothing stored');
    // Released: the same workspaces take events again.
    await Promise.all(locked.map((ws, n) => groupCommit.append(ws, emitRequest(200 + n))));
    for (const ws of locked) assert.equal((await feed(ws)).length, 1);
  });

  it('the process does not contend with itself: its statements in flight carry a workspace twice only after the patience', async () => {
    const ws = await workspace('hot');
    const groupCommit = new GroupCommit(db, systemClock);
    // Every append statement of this handle, with the workspaces it carries ($1) and when it ran.
    const statements: Array<{ workspaces: string[]; start: number; end?: number }> = [];
    const byUid = new Map<string, (typeof statements)[number]>();
    const onQuery = (query: { sql: string; __knexQueryUid: string; options?: { values?: unknown[] } }) => {
      if (!/insert into events/i.test(query.sql)) return;
      const first = query.options?.values?.[0];
      const entry = { workspaces: Array.isArray(first) ? (first as string[]) : [String(first)], start: performance.now() };
      statements.push(entry);
      byUid.set(query.__knexQueryUid, entry);
    };
    const onEnd = (_response: unknown, query: { __knexQueryUid: string }) => {
      const entry = byUid.get(query.__knexQueryUid);
      if (entry) entry.end = performance.now();
    };
    db.knex.on('query', onQuery).on('query-response', onEnd).on('query-error', onEnd);
    try {
      // Sixteen clients emitting into one workspace, each its next emit a moment after its answer.
      await Promise.all(
        Array.from({ length: 16 }, async (_, client) => {
          for (let n = 0; n < 15; n++) {
            await groupCommit.append(ws, emitRequest(client * 100 + n));
            await sleep(Math.random() * 3);
          }
        }),
      );
    } finally {
      db.knex.off('query', onQuery).off('query-response', onEnd).off('query-error', onEnd);
    }
    assert.ok(statements.length > 1);
    const contended = statements.filter((later, i) =>
      statements
        .slice(0, i)
        .some(
          (earlier) =>
            earlier.workspaces.includes(ws) && earlier.end! > later.start && later.start - earlier.start < SAME_WORKSPACE_PATIENCE_MS,
        ),
    );
    assert.deepEqual(contended, [], 'no statement sent while a younger one of the same workspace was in flight');
    assert.deepEqual(
      (await feed(ws)).map((row) => Number(row.seq)),
      Array.from({ length: 240 }, (_, i) => i + 1),
    );
  });
});
