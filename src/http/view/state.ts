// Everything tied to one key, replaced wholesale on connect and disconnect (replaceState): a loop
// or an answer that belongs to a replaced state sees it is no longer `state` and stops.
import type { EventEnvelope, EventTypeFilter, MailboxId } from './api-types.ts';

/** Where « Charger plus ancien » goes on: a page token, or the oldest shown event to find again. */
export interface OlderPosition {
  token: string | null;
  anchorId: string | null;
}

export interface Filters {
  types: EventTypeFilter[];
  mailboxes: MailboxId[];
}

export interface ViewState {
  /** Aborts every request of this key at once. */
  session: AbortController;
  /** The feed cursor the live tail reads after. */
  cursor: string | undefined;
  /** The events on screen, by id (the list shows them newest first). */
  rows: Map<string, EventEnvelope>;
  seen: Set<string>;
  older: OlderPosition;
  filters: Filters;
  /** Bumped by each reload: an answer for an older one is dropped. */
  viewGen: number;
  /** Bumped when the tail stops: a loop of an older generation ends. */
  tailGen: number;
  tailing: boolean;
  tailAbort: AbortController | null;
  /** Tail events read while the list is being replaced, put on top of it once it is there. */
  pendingTail: EventEnvelope[];
  caughtUp: boolean;
  longPoll: boolean | undefined;
  loading: boolean;
  olderBusy: boolean;
  walking: boolean;
  history: boolean;
  announced: number;
  pendingAnnounce: number;
  announceTimer: ReturnType<typeof setTimeout> | null;
}

function newState(): ViewState {
  return {
    session: new AbortController(),
    cursor: undefined,
    rows: new Map(),
    seen: new Set(),
    older: { token: null, anchorId: null },
    filters: { types: [], mailboxes: [] },
    viewGen: 0,
    tailGen: 0,
    tailing: false,
    tailAbort: null,
    pendingTail: [],
    caughtUp: false,
    longPoll: undefined,
    loading: false,
    olderBusy: false,
    walking: false,
    history: false,
    announced: 0,
    pendingAnnounce: 0,
    announceTimer: null,
  };
}

/** The current key's state (a live binding: importers see the replacement). */
export let state: ViewState = newState();

export function replaceState(): void {
  state = newState();
}

/** Stops the live tail: its loop (of an older generation now) ends, its held read is aborted. */
export function stopTail(): void {
  state.tailGen += 1;
  state.tailing = false;
  state.caughtUp = false;
  if (state.tailAbort) state.tailAbort.abort();
  state.tailAbort = null;
}
