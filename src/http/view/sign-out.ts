// Leaving a key: everything of it stopped and forgotten, the login form shown again.
import { clearAlert, showAlert } from './alerts.ts';
import { resetDetail } from './detail.ts';
import { typeBoxes, ui } from './dom.ts';
import { clearKey } from './key-storage.ts';
import { replaceState, state, stopTail } from './state.ts';

export function showLogin(): void {
  ui.feed.hidden = true;
  ui.logout.hidden = true;
  ui.login.hidden = false;
  ui.key.value = '';
}

/** Stops every read of the current key and empties the feed and its filters. */
export function resetFeed(): void {
  stopTail();
  state.session.abort();
  clearTimeout(state.announceTimer ?? undefined);
  replaceState();
  ui.list.replaceChildren();
  ui.live.checked = true;
  ui.status.textContent = '';
  ui.announcer.textContent = '';
  ui.count.textContent = '';
  for (const box of typeBoxes()) box.checked = false;
  ui.mailboxes.value = '';
  ui.mailboxes.removeAttribute('aria-invalid');
  ui.feed.removeAttribute('aria-busy');
  delete ui.older.dataset.loading;
  resetDetail();
}

/** Forgets the key (« Changer de clé », or the service refused it: `message` says so). */
export function disconnect({ message }: { message?: string } = {}): void {
  clearKey();
  resetFeed();
  showLogin();
  if (message) showAlert(message);
  else clearAlert();
  ui.key.focus();
}
