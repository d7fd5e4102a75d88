// Opening on the newest events: the head's cursor first (feed_cursor « now »), then the first page
// of list_events (newest first, filtered by the service), then the live tail from that cursor.
import { clearAlert, showAlert } from './alerts.ts';
import { isListPage } from './answers.ts';
import { request } from './api.ts';
import { ui } from './dom.ts';
import { FeedError, malformed } from './feed-error.ts';
import { frenchError } from './french-errors.ts';
import { PAGE_LIMIT } from './limits.ts';
import { listBody } from './list-body.ts';
import { startTail } from './live-follow.ts';
import { MSG } from './messages.ts';
import { insertNewer, replaceRows } from './rows.ts';
import { disconnect } from './sign-out.ts';
import { state, stopTail } from './state.ts';
import { setLoading, updateStatus } from './status.ts';
import { walkToHead } from './walk-to-head.ts';

/** What the tail does when the service refuses its cursor: start again at the present. */
const reloadFromHead = () => void loadNewest({ freshCursor: true });

/**
 * Shows the newest events. With `freshCursor`, first takes the head's cursor (before listing: what
 * arrives in between comes through the tail, and twice is deduplicated) and starts the tail when
 * live; without it, a running tail goes on from its cursor (a change of filters).
 */
export async function loadNewest({ freshCursor = true } = {}): Promise<void> {
  const current = state;
  const gen = ++current.viewGen;
  const stale = () => current !== state || gen !== current.viewGen;
  const live = ui.live.checked;
  if (freshCursor) stopTail();
  current.history = false;
  current.olderBusy = false;
  current.pendingTail = [];
  delete ui.older.dataset.loading;
  setLoading(true);
  try {
    let walkFrom: { after: string | undefined } | null = null;
    if (live && freshCursor) {
      try {
        const { payload } = await request('feed_cursor', { at: 'now' });
        if (typeof payload.cursor !== 'string') throw malformed();
        if (stale()) return;
        current.cursor = payload.cursor;
      } catch (err) {
        if (!(err instanceof FeedError) || err.kind !== 'not_found') throw err;
        walkFrom = { after: current.cursor };
      }
    }
    const { payload } = await request('list_events', listBody(PAGE_LIMIT));
    if (stale()) return;
    if (!isListPage(payload)) throw malformed();
    replaceRows(payload.events);
    current.older = { token: payload.next_page_token ?? null, anchorId: null };
    clearAlert();
    setLoading(false);
    const pending = current.pendingTail;
    current.pendingTail = [];
    insertNewer(pending);
    if (walkFrom) {
      current.walking = true;
      updateStatus();
      const { cursor, recent } = await walkToHead(walkFrom.after).finally(() => (current.walking = false));
      if (stale()) return;
      current.cursor = cursor;
      insertNewer(recent, { anchored: true });
    }
    if (ui.live.checked && !current.tailing) startTail(reloadFromHead);
    updateStatus();
  } catch (err) {
    if (stale()) return;
    setLoading(false);
    handleError(err, reloadFromHead);
  }
}

/** Says what went wrong, in French, with what to do next: retry, reload, or a new key. */
export function handleError(err: unknown, retry: () => void): void {
  const e = err instanceof FeedError ? err : new FeedError('internal');
  switch (e.kind) {
    case 'aborted':
      return;
    case 'unauthorized':
      disconnect({ message: MSG.unauthorized });
      return;
    case 'no_head':
      stopTail();
      ui.live.checked = false;
      updateStatus();
      showAlert(MSG.noHead);
      return;
    case 'forbidden':
    case 'invalid_argument':
    case 'not_found':
      showAlert(frenchError(e), { label: MSG.reload, run: reloadFromHead });
      return;
    default:
      showAlert(frenchError(e), { label: MSG.retry, run: retry });
  }
}
