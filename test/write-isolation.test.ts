/**
 * Writes of one workspace never fail another's, and every failure answer is true.
 *
 * Postgres: an application holds workspace A's counter row in a slow transaction (the library's
 * `publish`, as docs/library.md recommends) for HOLD_MS. Meanwhile workspace B's emits, concurrent and
 * one after another, must all be stored and answered before A is released; each of A's emits must
 * be either answered 201 and in A's feed, or answered with an error and absent from it.
 *
 * SQLite: one writer for the whole file, so another process holding the write lock holds every
 * workspace; what must hold there is the truth of every answer.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { newEventId } from '../src/base/ids.ts';
import { openDatabase, publish } from '../src/library.ts';
import type { Store } from '../src/store/port.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase, sqliteDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';

const HOLD_MS = 8000;
const EMIT = '/v1/emit_event';

interface Answer {
  workspace: string;
  id?: string;
  status: number;
  body: any;
  /** Whether the other writer still held its lock when the answer came. */
  whileHeld: boolean;
}

const idOf = (envelope: string) => (JSON.parse(envelope) as { id: string }).id;
const feedIds = async (store: Store, workspaceId: string) =>
  (await store.readPageRows({ workspaceId, afterSeq: 0, limit: 500, mailboxes: null })).map((row) => idOf(row.envelope));

/** Sends one emit (with a client id or not) and records its answer. */
async function emit(server: TestServer, key: string, workspace: string, n: number, withId: boolean, held: () => boolean): Promise<Answer> {
  const id = withId ? newEventId() : undefined;
  const res = await server.post(EMIT, { ...sampleEvent('mbx_a', n), ...(id ? { id } : {}) }, key);
  return { workspace, id: id ?? res.json?.event?.id ?? res.json?.error?.event_id, status: res.status, body: res.json, whileHeld: held() };
}

/**
 * Every answer is true: a 201 is in its feed exactly once, an error is the contract's and its event
 * is nowhere. Failures must say they stored nothing (a known failure), never that the outcome is unknown.
 */
async function assertAnswersTrue(store: Store, answers: Answer[]): Promise<void> {
  for (const workspace of new Set(answers.map((a) => a.workspace))) {
    const stored = await feedIds(store, workspace);
    assert.equal(new Set(stored).size, stored.length, 'no event twice');
    for (const answer of answers.filter((a) => a.workspace === workspace)) {
      const where = `${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`;
      if (answer.status === 201) {
        assert.ok(stored.includes(answer.id!), `answered 201 but not in the feed: ${where}`);
        continue;
      }
      assert.equal(answer.status, 500, where);
      assert.equal(contractErrors('Error', answer.body), null, where);
      assert.equal(answer.body.error.code, 'internal', where);
      assert.match(answer.body.error.message, /not stored/, where);
      if (answer.id !== undefined) assert.ok(!stored.includes(answer.id), `answered ${answer.status} but stored: ${where}`);
    }
  }
}

describe(
  'writes of one workspace never fail another (postgres)',
  { skip: !(await postgresAvailable()) && 'Postgres unreachable (see notice above)' },
  () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(await postgresDatabase());
    });
    after(async () => {
      await server?.stop();
      await server?.database.drop();
    });

    it("while an application's transaction holds A's counter row, B's emits are all stored before it ends; each A emit is stored or absent, as answered", async (t) => {
      const [a, b] = [await server.workspace(), await server.workspace()];
      const [{ key: keyA }, { key: keyB }] = [await server.key(a, ['read', 'write']), await server.key(b, ['read', 'write'])];
      const app = openDatabase(server.database.url);
      let released = false;
      const held = () => !released;
      try {
        let holding!: () => void;
        const holds = new Promise<void>((resolve) => (holding = resolve));
        const appTransaction = app
          .transaction(async (trx) => {
            await publish(trx, a, [sampleEvent('mbx_a', 999)]);
            holding();
            await sleep(HOLD_MS);
          })
          .finally(() => (released = true));
        await holds;
        const started = Date.now();

        // A's client emits steadily through the hold (some wait past a lock timeout, the last may outlive the hold).
        const aAnswers = Promise.all(
          Array.from({ length: Math.floor((HOLD_MS - 1000) / 400) }, async (_, n) => {
            await sleep(n * 400);
            return emit(server, keyA, a, n, n % 2 === 0, held);
          }),
        );
        // B, once A's emits are waiting: ten at once, then ten one after another (one client's successive emits).
        await sleep(1000);
        const bAnswers = await Promise.all(Array.from({ length: 10 }, (_, n) => emit(server, keyB, b, n, n % 2 === 0, held)));
        for (let n = 10; n < 20; n++) bAnswers.push(await emit(server, keyB, b, n, n % 2 === 0, held));
        const bDoneMs = Date.now() - started;

        await appTransaction;
        const aDone = await aAnswers;
        t.diagnostic(`B's 20 emits answered ${bDoneMs} ms into the hold; A's answers: ${aDone.map((x) => x.status).join(' ')}`);

        assert.deepEqual(
          bAnswers
            .filter((x) => x.status !== 201 || !x.whileHeld)
            .map((x) => `${x.status} while held: ${x.whileHeld} ${JSON.stringify(x.body).slice(0, 200)}`),
          [],
          "every B emit stored and answered while A's row was still held",
        );
        const stored = await feedIds(server.store, b);
        assert.deepEqual(
          stored.slice(10),
          bAnswers.slice(10).map((x) => x.id),
          "B's successive emits in their order",
        );
        assert.equal(stored.length, 20);
        await assertAnswersTrue(server.store, [...aDone, ...bAnswers]);
        const aStored = await feedIds(server.store, a);
        assert.equal(
          aStored.length,
          1 + aDone.filter((x) => x.status === 201).length,
          "A's feed: the application's event and the emits answered 201, nothing else",
        );
      } finally {
        await app.destroy();
      }
    });
  },
);

/** Another process takes the SQLite file's write lock and keeps it for `ms`; resolves once it holds it. */
async function holdSqliteWriteLock(file: string, ms: number): Promise<{ done: Promise<void> }> {
  const holder = spawn(process.execPath, [
    '-e',
    `const D = require(${JSON.stringify(createRequire(import.meta.url).resolve('better-sqlite3'))}); const d = new D(${JSON.stringify(file)});
     d.exec('BEGIN IMMEDIATE'); process.stdout.write('locked\\n');
     setTimeout(() => { d.exec('COMMIT'); process.exit(0); }, ${ms});`,
  ]);
  const done = new Promise<void>((resolve) => holder.once('exit', () => resolve()));
  await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
  return { done };
}

describe('every write answer is true while another process holds the write lock (sqlite)', () => {
  it('emits to two workspaces while another process holds the write lock past busy_timeout: each stored or absent, as answered', async () => {
    const server = await startTestServer(await sqliteDatabase());
    try {
      const [a, b] = [await server.workspace(), await server.workspace()];
      const [{ key: keyA }, { key: keyB }] = [await server.key(a, ['read', 'write']), await server.key(b, ['read', 'write'])];
      let released = false;
      // Longer than busy_timeout (5 s): a transaction's first try gives up waiting.
      const holder = await holdSqliteWriteLock(server.database.url.slice('sqlite:'.length), 6000);
      void holder.done.then(() => (released = true));
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, n) => emit(server, n % 2 ? keyA : keyB, n % 2 ? a : b, n, n % 3 === 0, () => !released)),
      );
      await holder.done;
      await assertAnswersTrue(server.store, answers);
    } finally {
      await server.stop();
      await server.database.drop();
    }
  });
});
