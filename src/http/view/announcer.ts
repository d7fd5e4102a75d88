// New events told to screen readers: one count at most every ANNOUNCE_EVERY_MS, not one per event.
import { ui } from './dom.ts';
import { plural } from './french-format.ts';
import { ANNOUNCE_EVERY_MS } from './limits.ts';
import { state } from './state.ts';

export function announce(n: number): void {
  state.pendingAnnounce += n;
  if (state.announceTimer) return;
  const wait = Math.max(0, state.announced + ANNOUNCE_EVERY_MS - Date.now());
  const current = state;
  current.announceTimer = setTimeout(() => {
    current.announceTimer = null;
    if (current !== state || current.pendingAnnounce === 0) return;
    const count = current.pendingAnnounce;
    current.pendingAnnounce = 0;
    current.announced = Date.now();
    ui.announcer.textContent = `${plural(count, 'nouvel événement', 'nouveaux événements')}.`;
  }, wait);
}
