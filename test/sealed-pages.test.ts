/**
 * SealedPages (the pages that can no longer change, kept for the next reader): only whole pages,
 * bounded in all and per workspace, least recently used out first.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SealedPages, type SealedPageKey } from '../src/feed/sealed-pages.ts';
import type { StoredPage } from '../src/store/port.ts';

const page = (count: number, bytes: number, cutAtByteCap = false): StoredPage => ({
  bytes: Buffer.alloc(bytes, 'x'),
  count,
  lastSeq: count,
  cutAtByteCap,
});
const at = (workspaceId: string, afterSeq: number, limit = 10): SealedPageKey => ({
  workspaceId,
  afterSeq,
  limit,
  mailboxes: null,
  withFacts: false,
});

describe('SealedPages', () => {
  it('keeps whole pages only: limit events, or stopped at the byte cap', () => {
    const pages = new SealedPages(1 << 20);
    pages.keep(at('w', 0), page(9, 100));
    assert.equal(pages.get(at('w', 0)), undefined, 'a short page may still grow');
    pages.keep(at('w', 10), page(9, 100, true));
    assert.equal(pages.get(at('w', 10))?.count, 9, 'cut at the byte cap: nothing more can fit in it');
    pages.keep(at('w', 20), page(10, 100));
    const kept = pages.get(at('w', 20));
    assert.equal(kept?.count, 10);
    assert.equal(kept?.prefetched, true, 'answered like a page read ahead: the expiry check asks whether a prune came since');
  });

  it('tells apart scopes, limits and pages with facts', () => {
    const pages = new SealedPages(1 << 20);
    pages.keep(at('w', 0), page(10, 100));
    assert.equal(pages.get({ ...at('w', 0), mailboxes: ['mbx_a'] }), undefined);
    assert.equal(pages.get(at('w', 0, 20)), undefined);
    assert.equal(pages.get({ ...at('w', 0), withFacts: true }), undefined);
    assert.equal(pages.get(at('v', 0)), undefined);
  });

  it('holds at most its bytes, a quarter of them per workspace, the least recently used going first', () => {
    const pages = new SealedPages(40_000);
    for (let i = 0; i < 5; i++) pages.keep(at('greedy', i * 10), page(10, 3_000));
    assert.ok(pages.bytes <= 10_000, `one workspace holds at most a quarter (${pages.bytes})`);
    assert.equal(pages.get(at('greedy', 0)), undefined, 'its oldest page went first');
    assert.ok(pages.get(at('greedy', 40)));
    for (const ws of ['a', 'b', 'c', 'd']) for (let i = 0; i < 3; i++) pages.keep(at(ws, i * 10), page(10, 3_000));
    assert.ok(pages.bytes <= 40_000, `bounded in all (${pages.bytes})`);
    assert.ok(pages.get(at('d', 20)), 'the newest stays');
  });

  it('keeps nothing with no bytes to keep it in (PAGE_CACHE_MB=0)', () => {
    const pages = new SealedPages(0);
    pages.keep(at('w', 0), page(10, 100));
    assert.equal(pages.get(at('w', 0)), undefined);
    assert.equal(pages.bytes, 0);
  });
});
