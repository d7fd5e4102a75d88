import { loadSpec } from '../contract/spec.ts';

/**
 * The most envelope bytes one page carries, whatever its `limit` (event_feed, list_events, over
 * HTTP and MCP alike): the contract's `x-page-max-bytes` (1 MiB), which documents it to clients and
 * the conformance kit. A page stops before the event that would take it past this (it always holds
 * at least one event, so an event larger than this still gets through, alone): `limit` is a
 * maximum. 500 events of the usual ~600 bytes stay far below it. It is what bounds a request's
 * memory: a page is bytes off the V8 heap, at most this (or one larger event).
 */
export const PAGE_MAX_BYTES: number = loadSpec().paths['/v1/event_feed'].post['x-page-max-bytes'];
if (!Number.isSafeInteger(PAGE_MAX_BYTES) || PAGE_MAX_BYTES < 64 * 1024)
  throw new Error('the contract must give event_feed an x-page-max-bytes of at least 64 KiB');

/**
 * What a request that answers a page reserves of the memory budget (MemoryBudget)
 * before reading it: the page twice (the database's copy or the reader's scratch, and the page
 * itself) and room for the rest of the answer. Shrunk to the real size once the page is read.
 */
export const PAGE_RESERVATION_BYTES = 2 * PAGE_MAX_BYTES + 64 * 1024;
