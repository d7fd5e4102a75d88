/**
 * The most envelope bytes one page carries, whatever its `limit` (event_feed, list_events, over
 * HTTP and MCP alike). A page stops before the event that would take it past this (it always holds
 * at least one event, so an event larger than this still gets through, alone): `limit` is a
 * maximum. The contract documents the figure; 500 events of the usual ~600 bytes stay far below it.
 * What bounds a request's memory: a page is bytes off the V8 heap, at most this plus one event.
 */
export const PAGE_MAX_BYTES = 1024 * 1024;

/**
 * What a request that answers a page reserves of the memory budget (limits/memory-budget.ts)
 * before reading it: the page twice (the database's copy or the reader's scratch, and the page
 * itself) and room for the rest of the answer. Shrunk to the real size once the page is read.
 */
export const PAGE_RESERVATION_BYTES = 2 * PAGE_MAX_BYTES + 64 * 1024;
