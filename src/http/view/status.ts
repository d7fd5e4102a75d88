// The status line (what the view is doing), the count of events shown, and the controls' states.
import { ui } from './dom.ts';
import { plural } from './french-format.ts';
import { state } from './state.ts';

export function updateStatus(): void {
  const parts: string[] = [];
  if (state.loading) parts.push('Chargement…');
  else if (ui.live.checked && state.tailing) {
    parts.push(state.caughtUp ? 'Suivi en direct : vous êtes à jour.' : 'Suivi en direct : lecture des nouveaux événements…');
  } else if (ui.live.checked && state.walking) parts.push('Suivi en direct : recherche de la fin du flux…');
  else if (state.history) parts.push('Suivi en direct en pause : vous consultez l’historique.');
  else if (!ui.live.checked) parts.push('Suivi en direct en pause.');
  if (!state.loading && !state.older.token && !state.older.anchorId) parts.push('Début de l’historique atteint.');
  const text = parts.join(' ');
  if (ui.status.textContent !== text) ui.status.textContent = text;
  ui.feed.dataset.caughtUp = String(state.caughtUp && state.tailing);
  ui.feed.dataset.live = String(state.tailing);
  ui.older.disabled = !state.older.token && !state.older.anchorId;
  ui.newestRow.hidden = !state.history;
  updateCount();
}

/** How many events are shown: plain text, not announced (it changes with every new event). */
export function updateCount(): void {
  const n = state.rows.size;
  const text = n === 0 ? 'Aucun événement affiché.' : `${plural(n, 'événement affiché', 'événements affichés')}.`;
  if (ui.count.textContent !== text) ui.count.textContent = text;
}

/** Marks the feed busy while the list is replaced, and says so. */
export function setLoading(loading: boolean): void {
  state.loading = loading;
  if (loading) ui.feed.setAttribute('aria-busy', 'true');
  else ui.feed.removeAttribute('aria-busy');
  updateStatus();
}
