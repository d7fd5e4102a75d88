/**
 * A failure answer to emit_event is true (Postgres). The service gives up on a query after
 * QUERY_TIMEOUT_MS (5 s); a statement that runs longer must be cancelled by Postgres first
 * (statement_timeout), so "not stored" means not stored. A commit that outlasts the query timeout
 * is the case left whose outcome nobody can know at the time: the answer says so and carries the
 * event's id, and a retry with that id stores the event once.
 *
 * Each case slows one workspace's writes down with a trigger of the test's own database, past
 * the query timeout: in the statement (BEFORE INSERT) or in the commit (a deferred constraint
 * trigger, which runs after statement_timeout no longer applies).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { EmitEventRequest } from '../generated/types.ts';
import { systemClock } from '../src/base/clock.ts';
import { ApiError } from '../src/base/errors.ts';
import { GroupCommit } from '../src/feed/group-commit.ts';
import { newEventId } from '../src/base/ids.ts';
import { QUERY_TIMEOUT_MS } from '../src/store/postgres/timeouts.ts';
import { openStore } from '../src/store/open-store.ts';
import { contractErrors, sampleEvent } from './support/contract.ts';
import { postgresAvailable, postgresDatabase } from './support/databases.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { until } from './support/wait.ts';

const EMIT = '/v1/emit_event';
/** Longer than the query timeout: what the client gives up on, Postgres would finish. */
const SLOW_MS = QUERY_TIMEOUT_MS + 1000;

describe(
  'failure answers to emit_event are true (postgres)',
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

    const feedIds = async (workspaceId: string) =>
      (await server.store.readPageRows({ workspaceId, afterSeq: 0, limit: 500, mailboxes: null })).map(
        (row) => (JSON.parse(row.envelope) as { id: string }).id,
      );

    /**
     * Slows down the transactions that insert events of these workspaces, once each, in the statement
     * or in its commit. Workspaces of their own: concurrent emits into them may share a statement or not.
     */
    async function slowDown(workspaceIds: string[], where: 'statement' | 'commit'): Promise<() => Promise<void>> {
      const name = `slow_${where}_${workspaceIds[0]!.toLowerCase()}`;
      await server.db.raw(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.workspace_id IN (${workspaceIds.map((id) => `'${id}'`).join(', ')}) AND current_setting('feed_test.slept', true) IS DISTINCT FROM 'yes' THEN
          PERFORM set_config('feed_test.slept', 'yes', true);
          PERFORM pg_sleep(${SLOW_MS / 1000});
        END IF;
        RETURN NEW;
      END $$`);
      await server.db.raw(
        where === 'statement'
          ? `CREATE TRIGGER ${name} BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ${name}()`
          : `CREATE CONSTRAINT TRIGGER ${name} AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${name}()`,
      );
      return async () => {
        await server.db.raw(`DROP TRIGGER ${name} ON events`);
        await server.db.raw(`DROP FUNCTION ${name}()`);
      };
    }

    it('a database that cannot be reached: answered "not stored" (no statement was sent)', async () => {
      const unreachable = openStore('postgres://root@127.0.0.1:1/none');
      try {
        const failure = await new GroupCommit(unreachable, systemClock).append('ws_none', sampleEvent('mbx_a', 1) as EmitEventRequest).then(
          () => assert.fail('stored in a database that cannot be reached'),
          (err: unknown) => err,
        );
        assert.ok(failure instanceof ApiError && failure.code === 'internal', String(failure));
        assert.equal(failure.eventId, undefined);
        assert.match(failure.message, /^the event was not stored: the database could not be reached/);
      } finally {
        await unreachable.close();
      }
    });

    it('a statement slower than the query timeout is cancelled by Postgres first: answered "not stored", and never stored', async () => {
      const ws = await server.workspace();
      const { key } = await server.key(ws, ['read', 'write']);
      const restore = await slowDown([ws], 'statement');
      const started = Date.now();
      const body = { ...sampleEvent('mbx_a', 1), id: newEventId() };
      const [withId, withoutId] = await Promise.all([server.post(EMIT, body, key), server.post(EMIT, sampleEvent('mbx_a', 2), key)]);
      for (const res of [withId, withoutId]) {
        assert.equal(res.status, 500, res.text);
        assert.equal(contractErrors('Error', res.json), null, res.text);
        assert.equal(res.json.error.code, 'internal');
        // The statement that ran was cancelled; an emit that did not share it waited for the row that one held.
        assert.match(
          res.json.error.message,
          /^the event was not stored: (the database did not finish the write within|another transaction held the workspace's feed for more than) \d+ s/,
          res.text,
        );
      }
      // Had Postgres gone on after the client gave up, it would have committed by now.
      await sleep(Math.max(0, started + SLOW_MS + 1000 - Date.now()));
      assert.deepEqual(await feedIds(ws), [], 'answered "not stored": nothing stored');
      assert.equal(Number((await server.db('feed_counters').where({ workspace_id: ws }).first()).last_seq), 0);
      await restore();
      const retry = await server.post(EMIT, body, key);
      assert.equal(retry.status, 201, retry.text);
      assert.deepEqual(await feedIds(ws), [body.id]);
    });

    it('a commit slower than the query timeout: answered "outcome unknown" with the event id, and a retry with it stores the event once', async () => {
      // One event with the client's id, one with the server's, each in a workspace of its own.
      const spaces = [await server.workspace(), await server.workspace()];
      const keys = [(await server.key(spaces[0]!, ['read', 'write'])).key, (await server.key(spaces[1]!, ['read', 'write'])).key];
      const restore = await slowDown(spaces, 'commit');
      const clientId = newEventId();
      const bodies = [{ ...sampleEvent('mbx_a', 1), id: clientId }, sampleEvent('mbx_a', 2)];
      const answers = await Promise.all(bodies.map((body, i) => server.post(EMIT, body, keys[i])));
      const retries: string[] = [];
      for (const [i, res] of answers.entries()) {
        assert.equal(res.status, 500, res.text);
        assert.equal(contractErrors('Error', res.json), null, res.text);
        assert.equal(res.json.error.code, 'internal');
        assert.equal(typeof res.json.error.request_id, 'string');
        const id = res.json.error.event_id;
        assert.match(id, /^evt_[0-9A-HJKMNP-TV-Z]{26}$/, res.text);
        if (i === 0) assert.equal(id, clientId, 'the id the client gave');
        assert.match(res.json.error.message, /outcome of this emit is unknown/, res.text);
        assert.ok(res.json.error.message.includes(`"id": "${id}"`), `the message names the id to retry with: ${res.text}`);
        retries.push(id);
      }
      // Postgres went on and committed after the client gave up: "unknown" was the true answer.
      await until(
        'the slow commits',
        async () => (await feedIds(spaces[0]!)).length + (await feedIds(spaces[1]!)).length === 2,
        SLOW_MS + 5000,
      );
      await restore();
      for (const [i, id] of retries.entries()) {
        const retry = await server.post(EMIT, { ...bodies[i], id }, keys[i]);
        assert.equal(retry.status, 200, `a retry with the id is answered as a replay: ${retry.text}`);
        assert.equal(retry.json.event.id, id);
        assert.deepEqual(await feedIds(spaces[i]!), [id], 'the event once');
      }
      // The same id with other content is still a conflict, whoever chose the id.
      const other = await server.post(EMIT, { ...sampleEvent('mbx_a', 3), id: retries[1] }, keys[1]);
      assert.equal(other.status, 400, other.text);
    });
  },
);
