/**
 * Issue 18's memory reproductions, together, against the service as it ships (its own process,
 * with the heap bounds of bin/event-feed.js's #! line), on SQLite and Postgres, while a second
 * tenant works: one key's requests for pages of large events, over MCP, in JSON-RPC batches and
 * through list_events, crashed the process with "Reached heap limit". Now the server stays up,
 * its RSS under the documented bound, and the other tenant is served throughout. Rate limiting is
 * off, as in the other process tests: the memory bound must hold without it (TENANT_TEST_RATE=100
 * runs the same with the default rate limit, to see the other tenant's latency as deployed).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { publish } from '../src/library.ts';
import { createKey } from '../src/auth/api-keys.ts';
import { openStore } from '../src/store/open-store.ts';
import { largeEvent, sampleEvent } from './support/contract.ts';
import { databaseKinds, type TestDatabase } from './support/databases.ts';
import { provision, startProcessServer, type ProcessServer } from './support/process-server.ts';

/** docs/limits-and-isolation.md, "Memory budget": the bound the server's memory stays under. */
const RSS_BOUND_MB = 256;
/**
 * The attack lasts ATTACK_SECONDS, and on until the other tenant has made VICTIM_ROUNDS rounds
 * (at most ATTACK_MAX_SECONDS). What is asserted about the other tenant is that it is served
 * throughout, never refused, each round within a bound: how many rounds fit in a fixed time is the
 * machine's speed (CI runs two test files at once on two cores, beside another suite's processes,
 * and saw a seventh of this machine's quiet rate), not the service's fairness.
 */
const ATTACK_SECONDS = 8;
const ATTACK_MAX_SECONDS = 40;
const VICTIM_ROUNDS = 10;

const rssMb = (pid: number) => {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
};

const MCP_HEADERS = (key: string) => ({
  authorization: `Bearer ${key}`,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
});
const toolCall = (id: number, name: string, args: unknown) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

for (const { kind, create, skip } of await databaseKinds()) {
  describe(`one tenant's large requests cannot take the process down (${kind})`, { skip }, () => {
    let database: TestDatabase;
    let server: ProcessServer;
    let attacker: string;
    let victim: { read: string; write: string };

    before(async () => {
      database = await create();
      const { workspaceId, keys } = await provision(database.url, { read: { permissions: ['read'] } });
      attacker = keys.read!;
      const store = openStore(database.url);
      const db = store.knex;
      try {
        // 500 events of ~62 KB (31 MB in all) and 500 ordinary ones, in the attacker's workspace.
        for (let batch = 0; batch < 10; batch++) {
          await db.transaction((trx) =>
            publish(
              trx,
              workspaceId,
              Array.from({ length: 50 }, (_, i) => largeEvent(`mbx_${i % 3}`, batch * 50 + i)),
            ),
          );
        }
        await db.transaction((trx) =>
          publish(
            trx,
            workspaceId,
            Array.from({ length: 500 }, (_, i) => sampleEvent('mbx_a', i)),
          ),
        );
        const other = (await store.createWorkspace('Victim', true, Date.now())).id;
        victim = {
          read: (await createKey(store, { workspaceId: other, permissions: ['read'], mailboxes: null }, Date.now())).key,
          write: (await createKey(store, { workspaceId: other, permissions: ['write'], mailboxes: null }, Date.now())).key,
        };
      } finally {
        await store.close();
      }
      server = await startProcessServer({
        databaseUrl: database.url,
        asShipped: true,
        env: {
          PRUNE_INTERVAL_SECONDS: '0',
          ...(process.env.TENANT_TEST_RATE ? { RATE_LIMIT_PER_SECOND: process.env.TENANT_TEST_RATE } : {}),
        },
      });
    });
    after(async () => {
      await server?.kill();
      await database?.drop();
    });

    it(`stays up and under ${RSS_BOUND_MB} MB of RSS while the other tenant is served`, async () => {
      const post = (path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
        fetch(server.url + path, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
        }).then(async (res) => {
          await res.arrayBuffer();
          return res.status;
        });
      const attackStarted = Date.now();
      const victimLatencies: number[] = [];
      const attacking = () =>
        server.alive &&
        (Date.now() < attackStarted + ATTACK_SECONDS * 1000 ||
          (victimLatencies.length < VICTIM_ROUNDS && Date.now() < attackStarted + ATTACK_MAX_SECONDS * 1000));
      const attackStatuses = new Map<number, number>();
      const count = (status: number) => attackStatuses.set(status, (attackStatuses.get(status) ?? 0) + 1);
      const loop = async (request: () => Promise<number>) => {
        while (attacking()) count(await request().catch(() => -1));
      };
      // The three reproductions, at once: MCP pages of 500 large events (two at a time),
      // batches of 100 tools/call (three at a time), list_events of 500 large events (eight at a time).
      const attacks = [
        ...Array.from({ length: 2 }, () =>
          loop(() => post('/mcp', attacker, toolCall(1, 'event_feed', { limit: 500 }), MCP_HEADERS(attacker))),
        ),
        ...Array.from({ length: 3 }, () =>
          loop(() =>
            post(
              '/mcp',
              attacker,
              Array.from({ length: 100 }, (_, i) => toolCall(i, 'event_feed', { limit: 500 })),
              MCP_HEADERS(attacker),
            ),
          ),
        ),
        ...Array.from({ length: 8 }, () => loop(() => post('/v1/list_events', attacker, { limit: 500 }))),
      ];

      // Meanwhile the other tenant emits and tails its feed.
      const victimFailures: string[] = [];
      const victimWork = (async () => {
        let after: string | undefined;
        let n = 0;
        while (attacking()) {
          const started = performance.now();
          const emitted = await post('/v1/emit_event', victim.write, sampleEvent('mbx_v', n++)).catch((err) => `error ${err}`);
          if (emitted !== 201) victimFailures.push(`emit ${emitted}`);
          const res = await fetch(`${server.url}/v1/event_feed`, {
            method: 'POST',
            headers: { authorization: `Bearer ${victim.read}`, 'content-type': 'application/json' },
            body: JSON.stringify(after ? { after } : {}),
          }).catch((err) => err as Error);
          if (res instanceof Error || res.status !== 200) victimFailures.push(`feed ${res instanceof Error ? res.message : res.status}`);
          else after = ((await res.json()) as { next_cursor: string }).next_cursor;
          victimLatencies.push(performance.now() - started);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();

      let peak = 0;
      const sampler = setInterval(() => {
        if (server.alive) peak = Math.max(peak, rssMb(server.child.pid!));
      }, 50);
      await Promise.all([...attacks, victimWork]);
      clearInterval(sampler);

      const sorted = [...victimLatencies].sort((a, b) => a - b);
      const p99 = sorted[Math.floor(sorted.length * 0.99)] ?? 0;
      console.log(
        `${kind}: peak RSS ${peak.toFixed(1)} MB; attack answers ${JSON.stringify([...attackStatuses])}; other tenant ${sorted.length} emit+poll rounds in ${((Date.now() - attackStarted) / 1000).toFixed(1)} s, p50 ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
      );
      assert.ok(server.alive, `the server died:\n${server.output().slice(-2000)}`);
      assert.ok(peak <= RSS_BOUND_MB, `peak RSS ${peak.toFixed(1)} MB`);
      assert.deepEqual(victimFailures, [], 'the other tenant was refused or failed');
      assert.ok(
        victimLatencies.length >= VICTIM_ROUNDS,
        `the other tenant made ${victimLatencies.length} rounds in ${ATTACK_MAX_SECONDS} s`,
      );
      assert.ok(p99 < 5000, `the other tenant waited ${p99.toFixed(0)} ms (p99)`);
      assert.ok(
        !attackStatuses.has(500) && !attackStatuses.has(-1),
        `the attacker got server errors or dropped connections: ${JSON.stringify([...attackStatuses])}`,
      );
    });
  });
}
