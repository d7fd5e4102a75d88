// The alert above the feed: one message at a time, announced (role="alert"), with an action button.
import { ui } from './dom.ts';

export interface AlertAction {
  label: string;
  run: () => void;
}

/** Shows an alert (announced); `from` marks one the tail clears itself once it reads again. */
export function showAlert(text: string, action?: AlertAction, from?: 'tail'): void {
  if (from) ui.alert.dataset.from = from;
  else delete ui.alert.dataset.from;
  const same = ui.alert.dataset.text === text && !action && !ui.alert.querySelector('button');
  if (same) return; // pas de nouvelle annonce pour un message identique (suivi en direct)
  ui.alert.replaceChildren();
  ui.alert.dataset.text = text;
  const p = document.createElement('p');
  p.textContent = text;
  ui.alert.append(p);
  if (action) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = action.label;
    button.addEventListener('click', () => {
      clearAlert();
      action.run();
    });
    ui.alert.append(button);
  }
  ui.alert.classList.add('visible');
}

export function clearAlert(): void {
  delete ui.alert.dataset.from;
  if (!ui.alert.dataset.text) return;
  ui.alert.replaceChildren();
  delete ui.alert.dataset.text;
  ui.alert.classList.remove('visible');
}

/** Whether the alert shown is one the tail put up (and clears once it reads again). */
export const alertIsFromTail = () => ui.alert.dataset.from === 'tail';
