// The events on screen (state.rows and the list, newest first), at most MAX_ROWS: replaced by a
// first page, newer ones put on top by the tail, older ones appended by « Charger plus ancien »;
// each id shown once.
import { announce } from './announcer.ts';
import type { EventEnvelope } from './api-types.ts';
import { ui } from './dom.ts';
import { MAX_ROWS, SEEN_IDS } from './limits.ts';
import { renderEvent } from './render-event.ts';
import { state, stopTail } from './state.ts';
import { updateCount, updateStatus } from './status.ts';

/** The service answered an event (checked: an answer is not trusted to be one). */
const isEnvelope = (event: unknown): event is EventEnvelope =>
  !!event && typeof (event as EventEnvelope).id === 'string' && typeof (event as EventEnvelope).type === 'string';

function remember(id: string): void {
  state.seen.add(id);
  if (state.seen.size > SEEN_IDS) state.seen.delete(state.seen.values().next().value!);
}

/** The active filters, applied to the tail as the service applies them to list_events. */
function matchesFilters(event: EventEnvelope): boolean {
  const { types, mailboxes } = state.filters;
  if (types.length && !types.includes(event.type)) return false;
  const mailbox = event.subject?.refs?.mailbox_id;
  if (mailboxes.length && (mailbox === undefined || !mailboxes.includes(mailbox))) return false;
  return true;
}

/** The id a row of the list stands for. */
const rowId = (li: Element | null | undefined): string | undefined => (li instanceof HTMLElement ? li.dataset.eventId : undefined);

/** Replaces what is shown by a first page of list_events (newest first). */
export function replaceRows(events: readonly EventEnvelope[]): void {
  state.rows.clear();
  const fragment = document.createDocumentFragment();
  for (const event of events) {
    if (!isEnvelope(event) || state.rows.has(event.id)) continue;
    state.rows.set(event.id, event);
    remember(event.id);
    fragment.append(renderEvent(event));
    if (state.rows.size >= MAX_ROWS) break;
  }
  ui.list.replaceChildren(fragment);
}

/**
 * Puts newer events (in emission order) on top. With `anchored`, only those after the newest
 * event shown, when it is among them. Returns how many were added.
 */
export function insertNewer(events: readonly EventEnvelope[], { anchored = false } = {}): number {
  let fresh = events;
  if (anchored) {
    const top = rowId(ui.list.firstElementChild);
    const at = top ? events.findIndex((e) => e && e.id === top) : -1;
    if (at >= 0) fresh = events.slice(at + 1);
  }
  fresh = fresh.filter((e) => isEnvelope(e) && !state.rows.has(e.id) && !state.seen.has(e.id) && matchesFilters(e));
  if (fresh.length === 0) return 0;
  if (fresh.length > MAX_ROWS) fresh = fresh.slice(-MAX_ROWS);
  const fragment = document.createDocumentFragment();
  let added = 0;
  for (let i = fresh.length - 1; i >= 0; i--) {
    const event = fresh[i]!;
    if (state.rows.has(event.id)) continue;
    state.rows.set(event.id, event);
    remember(event.id);
    fragment.append(renderEvent(event));
    added += 1;
  }
  ui.list.prepend(fragment);
  trimOldest();
  announce(added);
  updateCount();
  return added;
}

/** Past MAX_ROWS, the tail drops the oldest shown; « Charger plus ancien » finds the new oldest again. */
function trimOldest(): void {
  if (state.rows.size <= MAX_ROWS) return;
  while (state.rows.size > MAX_ROWS) {
    const li = ui.list.lastElementChild!;
    state.rows.delete(rowId(li)!);
    li.remove();
  }
  state.older = { token: null, anchorId: rowId(ui.list.lastElementChild) ?? null };
  updateStatus();
}

/** Appends older events (newest first); going past MAX_ROWS drops the newest and pauses the tail. */
export function appendOlder(events: readonly EventEnvelope[]): number {
  const fragment = document.createDocumentFragment();
  let added = 0;
  for (const event of events) {
    if (!isEnvelope(event) || state.rows.has(event.id)) continue;
    state.rows.set(event.id, event);
    remember(event.id);
    fragment.append(renderEvent(event));
    added += 1;
  }
  ui.list.append(fragment);
  if (state.rows.size > MAX_ROWS) {
    stopTail();
    ui.live.checked = false;
    state.history = true;
    while (state.rows.size > MAX_ROWS) {
      const li = ui.list.firstElementChild!;
      state.rows.delete(rowId(li)!);
      li.remove();
    }
  }
  updateCount();
  return added;
}
