// « Charger plus ancien »: the next pages of list_events (page_token), or, after the tail dropped
// the oldest shown, that event found again first.
import { clearAlert, showAlert } from './alerts.ts';
import { isListPage } from './answers.ts';
import type { EventEnvelope } from './api-types.ts';
import { request } from './api.ts';
import { ui } from './dom.ts';
import { malformed } from './feed-error.ts';
import { ANCHOR_PAGE_LIMIT, MAX_ROWS, PAGE_LIMIT } from './limits.ts';
import { listBody } from './list-body.ts';
import { handleError, loadNewest } from './load-newest.ts';
import { MSG } from './messages.ts';
import { appendOlder } from './rows.ts';
import { state } from './state.ts';
import { updateStatus } from './status.ts';

/**
 * Finds the oldest shown event again in list_events (newest first, same filters) after the tail
 * dropped what was below it: the events after it in that page, and the token that goes on.
 */
async function findAnchor(anchorId: string, stale: () => boolean): Promise<{ events: EventEnvelope[]; token: string | null } | null> {
  let token: string | null | undefined;
  const pages = Math.ceil((MAX_ROWS * 4) / ANCHOR_PAGE_LIMIT);
  for (let page = 0; page < pages; page++) {
    const { payload } = await request('list_events', listBody(ANCHOR_PAGE_LIMIT, token));
    if (stale()) return null;
    if (!isListPage(payload)) throw malformed();
    const at = payload.events.findIndex((e) => e && e.id === anchorId);
    if (at >= 0) return { events: payload.events.slice(at + 1), token: payload.next_page_token ?? null };
    token = payload.next_page_token;
    if (!token) return null;
  }
  return null;
}

export async function loadOlder(): Promise<void> {
  const current = state;
  if (current.olderBusy || current.loading) return;
  const gen = current.viewGen;
  const stale = () => current !== state || gen !== current.viewGen;
  current.olderBusy = true;
  ui.older.dataset.loading = 'true';
  ui.feed.setAttribute('aria-busy', 'true');
  try {
    let added = 0;
    // A page may come back empty while more match (list_events stopped looking): go on a little.
    for (let round = 0; round < 10 && added === 0; round++) {
      const older = current.older;
      if (older.anchorId) {
        const found = await findAnchor(older.anchorId, stale);
        if (stale()) return;
        if (current.older !== older) continue; // the tail moved the bottom meanwhile
        if (!found) {
          showAlert(MSG.anchorLost);
          void loadNewest({ freshCursor: !current.tailing });
          return;
        }
        added += appendOlder(found.events);
        current.older = { token: found.token, anchorId: null };
      } else if (older.token) {
        const { payload } = await request('list_events', listBody(PAGE_LIMIT, older.token));
        if (stale()) return;
        if (!isListPage(payload)) throw malformed();
        if (current.older !== older) continue;
        added += appendOlder(payload.events);
        current.older = { token: payload.next_page_token ?? null, anchorId: null };
      } else break;
    }
    clearAlert();
  } catch (err) {
    if (stale()) return;
    handleError(err, () => void loadOlder());
  } finally {
    if (!stale()) {
      current.olderBusy = false;
      delete ui.older.dataset.loading;
      if (!current.loading) ui.feed.removeAttribute('aria-busy');
      updateStatus();
    }
  }
}
