import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../src/base/errors.ts';
import { MemoryBudget, type Reservation } from '../src/limits/memory-budget.ts';

const settled = async <T>(promise: Promise<T>) => {
  let state: 'pending' | 'granted' | 'refused' = 'pending';
  promise.then(
    () => (state = 'granted'),
    () => (state = 'refused'),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
};

describe('MemoryBudget: answers in flight admitted against a budget', () => {
  it('grants up to the budget at once, then makes requests wait for room, first come first served', async () => {
    const budget = new MemoryBudget(100, 100, 5000);
    const a = await budget.admit('a', 60);
    const b = await budget.admit('b', 40);
    assert.equal(budget.used, 100);
    const c = budget.admit('c', 30);
    const d = budget.admit('d', 10);
    assert.equal(await settled(c), 'pending');
    assert.equal(await settled(d), 'pending', 'a later, smaller request does not overtake the one waiting for the budget');
    b.release();
    assert.equal(await settled(c), 'granted');
    assert.equal(await settled(d), 'granted');
    assert.equal(budget.used, 100);
    a.release();
    (await c).release();
    (await d).release();
    assert.equal(budget.used, 0);
  });

  it('refuses rate_limited (429, Retry-After) after waiting at most maxWaitMs', async () => {
    const budget = new MemoryBudget(10, 10, 30);
    const held = await budget.admit('a', 10);
    const started = Date.now();
    await assert.rejects(
      budget.admit('b', 5),
      (err) => err instanceof ApiError && err.code === 'rate_limited' && err.status === 429 && err.headers['Retry-After'] === '1',
    );
    assert.ok(Date.now() - started >= 25);
    held.release();
    assert.equal(budget.used, 0, 'the refused request left nothing reserved');
    (await budget.admit('b', 5)).release();
  });

  it('one tenant holds at most its share; the others are not held back by it', async () => {
    const budget = new MemoryBudget(100, 25, 5000);
    const mine: Reservation[] = [await budget.admit('greedy', 20)];
    const third = budget.admit('greedy', 20);
    assert.equal(await settled(third), 'pending', 'past its share');
    assert.equal(await settled(budget.admit('polite', 20)), 'granted', 'another key goes first');
    mine[0]!.release();
    assert.equal(await settled(third), 'granted');
  });

  it('a request larger than a share still runs when nothing else of its tenant does', async () => {
    const budget = new MemoryBudget(100, 25, 5000);
    const big = await budget.admit('k', 60);
    assert.equal(budget.used, 60);
    big.release();
  });

  it("a request larger than a share still runs beside a tenant's small holds (answers already read, kept a moment), not beside a page", async () => {
    const MiB = 1024 * 1024;
    const budget = new MemoryBudget(64 * MiB, MiB, 50);
    const small = await budget.admit('k', 4096);
    const page = await budget.admit('k', 2 * MiB);
    assert.equal(budget.used, 2 * MiB + 4096);
    await assert.rejects(
      budget.admit('k', 2 * MiB),
      (err) => err instanceof ApiError && err.code === 'rate_limited',
      'a second page waits for the first',
    );
    small.release();
    page.release();
  });

  it('resize gives back what the answer did not need; release is idempotent', async () => {
    const budget = new MemoryBudget(100, 100, 5000);
    const r = await budget.admit('a', 90);
    const waiting = budget.admit('b', 50);
    r.resize(40);
    assert.equal(await settled(waiting), 'granted');
    assert.equal(budget.used, 90);
    r.resize(80); // never grows back
    assert.equal(budget.used, 90);
    r.release();
    r.release();
    (await waiting).release();
    assert.equal(budget.used, 0);
  });
});

describe('pages over HTTP and MCP are admitted against the memory budget', () => {
  it('a workspace at its share waits, then gets 429 rate_limited with Retry-After; other workspaces and other operations go on', async () => {
    const { startTestServer } = await import('./support/server.ts');
    const { sqliteDatabase } = await import('./support/databases.ts');
    const server = await startTestServer(await sqliteDatabase(), { MEMORY_BUDGET_MB: '8' });
    try {
      const ws = await server.workspace();
      const busy = await server.key(ws, ['read', 'write']);
      const sameTenant = await server.key(ws, ['read']);
      const calm = await server.key(await server.workspace(), ['read']);
      // What the busy workspace's pages in flight hold: its whole share (an eighth of 8 MiB).
      const held = await server.services.memory.admit(ws, 1024 * 1024);
      const started = Date.now();
      const refused = await server.post('/v1/event_feed', {}, busy.key);
      assert.equal(refused.status, 429, refused.text);
      assert.equal(refused.json.error.code, 'rate_limited');
      assert.equal(refused.headers.get('retry-after'), '1');
      assert.ok(Date.now() - started >= 900, 'it waited for room first');
      const overMcp = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${busy.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_events', arguments: {} } }),
      }).then((res) => res.json() as Promise<any>);
      assert.equal(overMcp.result.isError, true);
      assert.match(overMcp.result.content[0].text, /^rate_limited : /);
      assert.equal(
        (await server.post('/v1/list_events', {}, sameTenant.key)).status,
        429,
        'another key of the same workspace waits as well',
      );
      assert.equal((await server.post('/v1/list_events', {}, calm.key)).status, 200, 'another workspace is served');
      assert.equal(
        (await server.post('/v1/emit_event', (await import('./support/contract.ts')).sampleEvent('mbx_a', 1), busy.key)).status,
        201,
        'what answers no page is not held back',
      );
      held.release();
      assert.equal((await server.post('/v1/event_feed', {}, busy.key)).status, 200);
      const { until } = await import('./support/wait.ts');
      await until('every answer to give its reservation back', () => server.services.memory.used === 0);
    } finally {
      await server.stop();
      await server.database.drop();
    }
  });
});
