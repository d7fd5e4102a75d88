// « Suivi en direct »: event_feed after the head's cursor, one read at a time, held by the service
// (Prefer: wait); new events go on top of the list (insertNewer), filtered and deduplicated there.
import { alertIsFromTail, clearAlert, showAlert } from './alerts.ts';
import { isFeedPage } from './answers.ts';
import { call } from './api.ts';
import { ui } from './dom.ts';
import { FeedError, malformed } from './feed-error.ts';
import { frenchError } from './french-errors.ts';
import { FALLBACK_POLL_MS, LONG_POLL_SECONDS, MAX_BACKOFF_MS, MAX_ROWS, TAIL_LIMIT } from './limits.ts';
import { MSG } from './messages.ts';
import { insertNewer } from './rows.ts';
import { disconnect } from './sign-out.ts';
import { sleep } from './sleep.ts';
import { state, stopTail, type ViewState } from './state.ts';
import { updateStatus } from './status.ts';

/**
 * Starts the tail at the head's cursor, just taken: caught up until a read says otherwise.
 * `reloadNewest` is what to do when the service refuses the cursor (expired, or past the head of a
 * restored database): start again at the present (loadNewest, which starts this tail).
 */
export function startTail(reloadNewest: () => void): void {
  const gen = ++state.tailGen;
  state.tailing = true;
  state.caughtUp = true;
  void tailLoop(state, gen, reloadNewest);
  updateStatus();
}

/**
 * Reads event_feed after the cursor, one read at a time: held by the service until something
 * arrives (Prefer: wait), or, when the answer says it was not held, again after FALLBACK_POLL_MS.
 */
async function tailLoop(current: ViewState, gen: number, reloadNewest: () => void): Promise<void> {
  const running = () => current === state && gen === current.tailGen;
  let backoff = 1000;
  while (running()) {
    // Aborted by stopTail() and by the end of the session: ends a held read and a pause alike.
    const controller = new AbortController();
    const onSessionEnd = () => controller.abort();
    current.session.signal.addEventListener('abort', onSessionEnd, { once: true });
    current.tailAbort = controller;
    let pause = 0;
    try {
      const sentAt = Date.now();
      const { payload, longPoll } = await call(
        'event_feed',
        { after: current.cursor, limit: TAIL_LIMIT },
        {
          signal: controller.signal,
          wait: LONG_POLL_SECONDS,
          timeoutMs: (LONG_POLL_SECONDS + 15) * 1000,
        },
      );
      if (!running()) return;
      if (!isFeedPage(payload)) throw malformed();
      const previous = current.cursor;
      current.cursor = payload.next_cursor;
      current.longPoll = longPoll;
      if (current.loading) {
        // The list is being replaced (new filters): these go on top of it once it is there.
        current.pendingTail.push(...payload.events);
        if (current.pendingTail.length > MAX_ROWS) current.pendingTail.splice(0, current.pendingTail.length - MAX_ROWS);
      } else insertNewer(payload.events);
      // A page shorter than asked reached the head (or the 1 MiB cap: the next read goes on).
      const nothingNew = payload.events.length === 0 || payload.next_cursor === previous;
      current.caughtUp = payload.events.length < TAIL_LIMIT;
      backoff = 1000;
      if (alertIsFromTail()) clearAlert();
      updateStatus();
      // Not held (an older service), or held for less than a second with nothing new: pause first.
      if (nothingNew && (!longPoll || Date.now() - sentAt < 1000)) pause = FALLBACK_POLL_MS;
    } catch (err) {
      if (!running()) return;
      const e = err instanceof FeedError ? err : new FeedError('internal');
      if (e.kind === 'aborted') return;
      if (e.kind === 'unauthorized') {
        disconnect({ message: MSG.unauthorized });
        return;
      }
      if (e.kind === 'forbidden') {
        stopTail();
        ui.live.checked = false;
        updateStatus();
        showAlert(frenchError(e));
        return;
      }
      if (e.kind === 'invalid_argument') {
        // The cursor expired, or is past the head (a restored database): start again at the present.
        showAlert(`${frenchError(e)} Les événements les plus récents sont rechargés.`);
        reloadNewest();
        return;
      }
      current.caughtUp = false;
      showAlert(frenchError(e), undefined, 'tail');
      updateStatus();
      if (e.kind === 'rate_limited') pause = e.retryAfter * 1000;
      else {
        pause = backoff;
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    } finally {
      current.session.signal.removeEventListener('abort', onSessionEnd);
    }
    if (pause > 0) await sleep(pause, controller.signal);
    if (current.tailAbort === controller) current.tailAbort = null;
  }
}
