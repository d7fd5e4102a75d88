/**
 * Read replicas (DATABASE_READ_URLS, store/postgres/replicas.ts) against a real primary and real
 * streaming replicas of it (Debian's Postgres binaries, test/support/pg-cluster.ts): one that keeps
 * up, one held 300 ms behind on purpose (recovery_min_apply_delay). Catch-up pages come from a
 * replica when its page is whole; nothing else changes: no gap, no reorder, read-your-writes
 * through any instance, expired cursors refused, a lost replica degrades to the primary.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import knexFactory, { type Knex } from 'knex';
import { publish } from '../src/library.ts';
import { openStore } from '../src/store/open-store.ts';
import { sampleEvent } from './support/contract.ts';
import { postgresAvailable, underCi } from './support/databases.ts';
import { clustersAvailable, startPrimaryAndReplicas, type PrimaryAndReplicas } from '../bench/pg-cluster.ts';
import { until } from './support/wait.ts';
import { provision, startProcessServer, type ProcessServer } from './support/process-server.ts';

const runnable =
  (await postgresAvailable()) &&
  (clustersAvailable() || (underCi() ? assert.fail('CI=true but Postgres 15 binaries to start clusters are missing') : false));

const SEEDED = 1200;
/** The seeded events were stored 40 days ago: past retention, so that pruning them is what the service itself would do. */
const FORTY_DAYS_AGO = { now: () => new Date(Date.now() - 40 * 24 * 3600 * 1000) };

describe(
  'read replicas serve catch-up pages (postgres primary + streaming replicas)',
  { skip: !runnable && 'Postgres or its binaries unavailable' },
  () => {
    let clusters: PrimaryAndReplicas;
    let withReplica: ProcessServer; // replica 1 (keeps up)
    let withDelayed: ProcessServer; // replica 2 (300 ms behind)
    let primaryOnly: ProcessServer;
    let workspaceId: string;
    let keys: Record<string, string>;
    let replicaDb: Knex;
    const seededIds: string[] = [];

    const post = async (server: ProcessServer, path: string, key: string, body: unknown) => {
      const res = await fetch(server.url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: (await res.json()) as any };
    };
    /** Reads the feed from `after` until a page comes back empty: the ids, in order. */
    const readAll = async (server: ProcessServer, key: string, limit: number, after?: string) => {
      const ids: string[] = [];
      let cursor = after;
      for (;;) {
        const { status, json } = await post(server, '/v1/event_feed', key, cursor ? { after: cursor, limit } : { limit });
        assert.equal(status, 200, JSON.stringify(json));
        ids.push(...json.events.map((event: { id: string }) => event.id));
        if (json.events.length === 0) return { ids, cursor };
        cursor = json.next_cursor;
      }
    };
    /** Index scans and sequential scans of `events` on the replica: local to it, counted by its statistics. */
    const replicaScans = async () =>
      Number(
        (
          await replicaDb.raw(
            "SELECT coalesce(sum(idx_scan + seq_scan), 0) AS n FROM pg_stat_user_tables WHERE relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'events'::regclass)",
          )
        ).rows[0].n,
      );
    const readyz = async (server: ProcessServer) =>
      (await (await fetch(`${server.url}/readyz`)).json()) as {
        status: string;
        replicas?: Array<{ name: string; serving: boolean; reason?: string }>;
      };

    before(async () => {
      clusters = await startPrimaryAndReplicas({ database: 'feed', replicas: [[], ['recovery_min_apply_delay=300ms']] });
      const [replica, delayed] = clusters.replicas;
      const primaryUrl = clusters.primary.url('feed');
      ({ workspaceId, keys } = await provision(primaryUrl, {
        read: { permissions: ['read'] },
        restricted: { permissions: ['read'], mailboxes: ['mbx_a'] },
        write: { permissions: ['write'] },
      }));
      const store = openStore(primaryUrl);
      try {
        for (let batch = 0; batch < SEEDED / 100; batch++) {
          const stored = await store.knex.transaction((trx) =>
            publish(
              trx,
              workspaceId,
              Array.from({ length: 100 }, (_, i) => sampleEvent(i % 2 ? 'mbx_a' : 'mbx_b', batch * 100 + i)),
              FORTY_DAYS_AGO,
            ),
          );
          seededIds.push(...stored.map((s) => (JSON.parse(s.envelope) as { id: string }).id));
        }
      } finally {
        await store.close();
      }
      replicaDb = knexFactory({ client: 'pg', connection: replica!.url('feed') });
      await until(
        'the replica has the seeded events',
        async () => Number((await replicaDb.raw('SELECT count(*) AS n FROM events')).rows[0].n) === SEEDED,
        15_000,
      );
      const serve = (readUrls: string[]) =>
        startProcessServer({
          databaseUrl: primaryUrl,
          env: { LOG_LEVEL: 'info', PRUNE_INTERVAL_SECONDS: '0', ...(readUrls.length ? { DATABASE_READ_URLS: readUrls.join(',') } : {}) },
        });
      [withReplica, withDelayed, primaryOnly] = await Promise.all([
        serve([replica!.url('feed')]),
        serve([delayed!.url('feed')]),
        serve([]),
      ]);
      await until(
        'both replicas serve',
        async () =>
          (await readyz(withReplica)).replicas?.[0]?.serving === true && (await readyz(withDelayed)).replicas?.[0]?.serving === true,
        15_000,
      );
    });
    after(async () => {
      await Promise.all([withReplica?.kill(), withDelayed?.kill(), primaryOnly?.kill()]);
      await replicaDb?.destroy();
      await clusters?.stop();
    });

    it('/readyz names each replica and whether it serves, without credentials', async () => {
      const body = await readyz(withReplica);
      assert.equal(body.status, 'ready');
      assert.equal(body.replicas?.length, 1);
      assert.match(body.replicas![0]!.name, /^replica 1 \(127\.0\.0\.1:\d+\/feed\)$/);
      assert.equal((await readyz(primaryOnly)).replicas, undefined, 'no replicas configured, none reported');
    });

    it('a replay is served by the replica: every event once, in order, whole-feed and restricted keys', async () => {
      const scans = await replicaScans();
      assert.deepEqual((await readAll(withReplica, keys.read!, 100)).ids, seededIds);
      const restricted = await readAll(withReplica, keys.restricted!, 100);
      assert.deepEqual(
        restricted.ids,
        seededIds.filter((_, i) => i % 2 === 1),
      );
      // The replica's statistics reach its views within a second or so.
      await until('the replica counted the pages it read', async () => (await replicaScans()) > scans, 15_000);
    });

    it('a cursor obtained on the primary is read from the replica, and the other way round', async () => {
      const first = await post(primaryOnly, '/v1/event_feed', keys.read!, { limit: 400 });
      const rest = await readAll(withReplica, keys.read!, 100, first.json.next_cursor);
      assert.deepEqual([...first.json.events.map((e: { id: string }) => e.id), ...rest.ids], seededIds);
      const fromReplica = await post(withReplica, '/v1/event_feed', keys.read!, { limit: 450 });
      const onPrimary = await readAll(primaryOnly, keys.read!, 100, fromReplica.json.next_cursor);
      assert.deepEqual([...fromReplica.json.events.map((e: { id: string }) => e.id), ...onPrimary.ids], seededIds);
    });

    it('read-your-writes through an instance whose replica is 300 ms behind: an emit answered before a poll is in it', async () => {
      // Every emit answered is in the poll that follows it, whichever instance polls.
      let after = (await readAll(primaryOnly, keys.read!, 500)).cursor;
      for (let round = 0; round < 5; round++) {
        const emitted = await post(primaryOnly, '/v1/emit_event', keys.write!, sampleEvent('mbx_b', 20_000 + round));
        // limit 1: a page behind, so the replica is asked first; its page is short (it lags), and the primary answers.
        const polled = await post(withDelayed, '/v1/event_feed', keys.read!, { after, limit: 1 });
        assert.equal(polled.status, 200);
        assert.deepEqual(
          polled.json.events.map((e: { id: string }) => e.id),
          [emitted.json.event.id],
          `round ${round}`,
        );
        after = polled.json.next_cursor;
      }
    });

    it('tailing readers under 16 writers see every event once, in order', async () => {
      const { cursor: start } = await readAll(primaryOnly, keys.read!, 500);
      const deadline = Date.now() + 3000;
      const writers = Array.from({ length: 16 }, async (_, w) => {
        let n = 0;
        while (Date.now() < deadline)
          assert.equal(
            (await post(w % 2 ? withReplica : primaryOnly, '/v1/emit_event', keys.write!, sampleEvent('mbx_a', 30_000 + w * 1000 + n++)))
              .status,
            201,
          );
      });
      const readers = Array.from({ length: 4 }, async (_, r) => {
        const seen: string[] = [];
        let cursor = start;
        const server = r % 2 ? withReplica : withDelayed;
        for (let idle = 0; idle < 10;) {
          const { status, json } = await post(server, '/v1/event_feed', keys.read!, { after: cursor, limit: 7 });
          assert.equal(status, 200);
          seen.push(...json.events.map((e: { id: string }) => e.id));
          cursor = json.next_cursor;
          idle = Date.now() > deadline && json.events.length === 0 ? idle + 1 : 0;
          if (json.events.length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        return seen;
      });
      await Promise.all(writers);
      const truth = (await readAll(primaryOnly, keys.read!, 500, start)).ids;
      assert.ok(truth.length > 100, `${truth.length} events written`);
      for (const seen of await Promise.all(readers)) assert.deepEqual(seen, truth);
    });

    it('list_events: later pages from the replica, the first from the primary, the same pages as the primary gives', async () => {
      const listAll = async (server: ProcessServer, body: Record<string, unknown>) => {
        const ids: string[] = [];
        let token: string | null = null;
        do {
          const { status, json } = await post(server, '/v1/list_events', keys.read!, token ? { ...body, page_token: token } : body);
          assert.equal(status, 200, JSON.stringify(json));
          ids.push(...json.events.map((e: { id: string }) => e.id));
          token = json.next_page_token;
        } while (token);
        return ids;
      };
      const scans = await replicaScans();
      for (const body of [{ limit: 100 }, { limit: 50, mailbox_ids: ['mbx_a'] }, { limit: 30, types: ['mail.received'] }]) {
        const viaReplica = await listAll(withReplica, body);
        assert.ok(viaReplica.length >= SEEDED / 2, `${viaReplica.length} events listed for ${JSON.stringify(body)}`);
        assert.deepEqual(viaReplica, await listAll(primaryOnly, body), JSON.stringify(body));
      }
      await until('the replica read list_events pages', async () => (await replicaScans()) > scans, 15_000);
      // The first page is read from the head down on the primary: an emit answered before it is on it,
      // through the instance whose replica is 300 ms behind too.
      const emitted = await post(primaryOnly, '/v1/emit_event', keys.write!, sampleEvent('mbx_a', 40_000));
      const first = await post(withDelayed, '/v1/list_events', keys.read!, { limit: 5 });
      assert.equal(first.json.events[0].id, emitted.json.event.id);
      // Later pages whose events the delayed replica has not applied yet come from the primary.
      const burst: string[] = [];
      for (let n = 0; n < 10; n++)
        burst.unshift((await post(primaryOnly, '/v1/emit_event', keys.write!, sampleEvent('mbx_a', 41_000 + n))).json.event.id);
      const pages: string[] = [];
      let token: string | null = null;
      while (pages.length < 12) {
        const { json } = await post(withDelayed, '/v1/list_events', keys.read!, token ? { limit: 2, page_token: token } : { limit: 2 });
        pages.push(...json.events.map((e: { id: string }) => e.id));
        token = json.next_page_token;
      }
      assert.deepEqual(pages.slice(0, 11), [...burst, emitted.json.event.id]);
    });

    it('a replica stopped mid-replay: the primary answers the rest, /readyz and the log say so', async () => {
      const ids: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; ; page++) {
        if (page === 3) await clusters.replicas[0]!.stop();
        const { status, json } = await post(
          withReplica,
          '/v1/event_feed',
          keys.read!,
          cursor ? { after: cursor, limit: 100 } : { limit: 100 },
        );
        assert.equal(status, 200, JSON.stringify(json));
        if (json.events.length === 0) break;
        ids.push(...json.events.map((e: { id: string }) => e.id));
        cursor = json.next_cursor;
      }
      assert.deepEqual(ids, (await readAll(primaryOnly, keys.read!, 500)).ids);
      await until('/readyz reports the replica out', async () => (await readyz(withReplica)).replicas?.[0]?.serving === false, 15_000);
      const body = await readyz(withReplica);
      assert.equal(body.status, 'ready', 'the primary still serves');
      assert.match(withReplica.output(), /read replica no longer serving/);
    });

    it('expired cursors are refused as soon as the primary pruned, even where the replica still holds the events', async () => {
      const oldCursor = (await post(primaryOnly, '/v1/event_feed', keys.read!, { limit: 10 })).json.next_cursor;
      const store = openStore(clusters.primary.url('feed'));
      try {
        // Retention as the service runs it: everything stored more than 30 days ago (the seeded events).
        await store.pruneAll(Date.now() - 30 * 24 * 3600 * 1000, 1000);
      } finally {
        await store.close();
      }
      // At once, while the delayed replica still holds the pruned events, and after.
      for (const wait of [0, 1000]) {
        await new Promise((resolve) => setTimeout(resolve, wait));
        for (const key of [keys.read!, keys.restricted!]) {
          const { status, json } = await post(withDelayed, '/v1/event_feed', key, { after: oldCursor, limit: 10 });
          assert.equal(
            status,
            400,
            `${key === keys.read ? 'whole feed' : 'restricted'}, after ${wait} ms: ${JSON.stringify(json).slice(0, 200)}`,
          );
          assert.match(json.error.message, /after has expired/);
        }
      }
      assert.equal((await post(primaryOnly, '/v1/event_feed', keys.read!, { after: oldCursor, limit: 10 })).status, 400);
    });
  },
);
