import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HeldReads } from '../src/feed/held-reads.ts';
import { ApiError } from '../src/base/errors.ts';

const LIMITS = { max: 4, perKey: 2, perWorkspace: 4, stallMs: 1000 };
/** A key of a workspace of its own. */
const k = (keyId: string, workspaceId = `ws_of_${keyId}`) => ({ keyId, workspaceId });
const soon = () => performance.now() + 5000;
const settled = async (promise: Promise<unknown>) =>
  (await Promise.race([promise.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 50))])) as boolean;

describe('held reads (long-polls and streams)', () => {
  it('bounds held reads per key and in all, with 429 and Retry-After, and gives slots back', () => {
    const held = new HeldReads(LIMITS);
    const a1 = held.hold(k('key_a'));
    held.hold(k('key_a'));
    assert.throws(
      () => held.hold(k('key_a')),
      (err: unknown) => err instanceof ApiError && err.status === 429 && err.headers['Retry-After'] === '1',
    );
    held.hold(k('key_b'));
    held.hold(k('key_c'));
    assert.throws(
      () => held.hold(k('key_d')),
      (err: unknown) => err instanceof ApiError && err.code === 'rate_limited',
      'the process bound',
    );
    a1.release();
    a1.release(); // twice is once
    assert.equal(held.held, 3);
    held.hold(k('key_d'));
  });

  it('wakes a watch for a move heard after it began, even before it waits (no commit slept through)', async () => {
    const held = new HeldReads(LIMITS);
    const watch = held.watch('ws_1');
    held.moved('ws_1'); // between the read and the wait
    assert.equal(await watch.until(soon()), 'moved');
    const other = held.watch('ws_1');
    const waiting = other.until(soon());
    held.moved('ws_2');
    assert.equal(await settled(waiting), false, 'another workspace does not wake it');
    held.moved('ws_1');
    assert.equal(await waiting, 'moved');
  });

  it('ends waits at the deadline, on abort, and at shutdown (after which nothing is held)', async () => {
    const held = new HeldReads(LIMITS);
    assert.equal(await held.watch('ws_1').until(performance.now() + 30), 'timeout');
    const gone = new AbortController();
    const aborted = held.watch('ws_1').until(soon(), gone.signal);
    gone.abort();
    assert.equal(await aborted, 'aborted');
    const closing = held.watch('ws_1').until(soon());
    held.close();
    assert.equal(await closing, 'closing');
    assert.equal(await held.watch('ws_1').until(soon()), 'closing');
    assert.throws(
      () => held.hold(k('key_a')),
      (err: unknown) => err instanceof ApiError && err.status === 429,
    );
  });

  it('after another process wrote (SQLite), wakes only the workspaces whose stored head moved', async () => {
    const stored = new Map([
      ['ws_1', 5],
      ['ws_2', 9],
    ]);
    let lookups = 0;
    const held = new HeldReads(LIMITS, { headsOf: async (ids) => (lookups++, new Map(ids.map((id) => [id, stored.get(id) ?? 0]))) });
    // Heads not looked at yet: woken, since what changed cannot be told.
    const first = [held.watch('ws_1').until(soon()), held.watch('ws_2').until(soon())];
    held.othersWrote();
    assert.deepEqual(await Promise.all(first), ['moved', 'moved']);
    const w1 = held.watch('ws_1');
    const w2 = held.watch('ws_2');
    const [p1, p2] = [w1.until(soon()), w2.until(soon())];
    held.othersWrote();
    await new Promise((resolve) => setTimeout(resolve, 20));
    stored.set('ws_2', 10);
    held.othersWrote();
    assert.equal(await p2, 'moved');
    assert.equal(await settled(p1), false, 'ws_1 did not move: still waiting');
    assert.ok(lookups >= 2);
    w1.cancel();
  });

  it('re-reads every recheck while the change channel is down (Postgres), and waits quietly once it is up', async () => {
    const held = new HeldReads(LIMITS, { channelDown: true, recheckMs: 30 });
    const started = performance.now();
    assert.equal(await held.watch('ws_1').until(soon()), 'moved');
    assert.ok(performance.now() - started < 1000);
    held.channelOpened();
    assert.equal(await settled(held.watch('ws_1').until(soon())), false);
    const waiting = held.watch('ws_1').until(soon());
    held.channelLost();
    assert.equal(await waiting, 'moved', 'a loss wakes everyone: commits may have gone unheard');
  });
});

describe('reads of polls woken by one commit, shared', () => {
  const result = (n: number) => ({ events: { bytes: Buffer.from(`{"n":${n}}`), count: 1, lastSeq: n, cutAtByteCap: false }, afterSeq: 0 });

  it('shares a read begun after the wake, never one begun before it', async () => {
    const { SharedReads } = await import('../src/feed/shared-reads.ts');
    const shared = new SharedReads<ReturnType<typeof result>>();
    let reads = 0;
    const read = async () => result(++reads);
    const wokenAt = performance.now();
    const first = shared.read('ws 5 100  *', wokenAt, read);
    const second = shared.read('ws 5 100  *', wokenAt, read);
    assert.equal(await first, await second, "the second poll woken by the same commit takes the first one's read");
    assert.equal(reads, 1);
    assert.equal((await shared.read('ws 5 100  *', wokenAt, read)).events.lastSeq, 1, 'kept briefly for the others woken then');
    assert.equal((await shared.read('ws 5 100  *', performance.now() + 1, read)).events.lastSeq, 2, 'a later wake reads again');
    assert.equal((await shared.read('ws 6 100  *', wokenAt, read)).events.lastSeq, 3, 'another cursor reads on its own');
  });
});
