// Entering a key: kept for this tab (saveKey), then the newest events and the live tail.
import { clearAlert, showAlert } from './alerts.ts';
import { ui } from './dom.ts';
import { saveKey } from './key-storage.ts';
import { loadNewest } from './load-newest.ts';
import { MSG } from './messages.ts';
import { disconnect, resetFeed } from './sign-out.ts';

function showFeed(): void {
  ui.login.hidden = true;
  ui.feed.hidden = false;
  ui.logout.hidden = false;
}

/** Shows the feed of the key kept, from a clean state. */
export function connect(): void {
  resetFeed();
  clearAlert();
  showFeed();
  void loadNewest({ freshCursor: true });
}

export function setUpSignIn(): void {
  ui.loginForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const key = ui.key.value.trim();
    if (!key) {
      showAlert(MSG.emptyKey);
      ui.key.focus();
      return;
    }
    saveKey(key);
    ui.key.value = '';
    connect();
    ui.feedTitle.focus();
  });

  ui.logout.addEventListener('click', () => disconnect());
}
