// The detail dialog: an event's raw envelope (JSON), a copy button, focus given back on close.
import { ui } from './dom.ts';
import { formatTime } from './french-format.ts';
import { typeLabel } from './labels.ts';
import { state } from './state.ts';

/** The button that opened the dialog: focus goes back to it on close. */
let opener: HTMLElement | null = null;

function openDetail(id: string, trigger: HTMLElement): void {
  const event = state.rows.get(id);
  if (!event) return;
  opener = trigger;
  ui.detailSummary.textContent = `${typeLabel(event.type)} — ${formatTime(event.occurred_at)} — ${event.id}`;
  ui.detailJson.textContent = JSON.stringify(event, null, 2);
  ui.copyStatus.textContent = '';
  ui.dialog.dataset.eventId = event.id;
  ui.dialog.showModal();
  ui.detailClose.focus();
}

function closeDetail(): void {
  if (ui.dialog.open) ui.dialog.close();
}

/** Closes the dialog without giving focus back to a row that is going away (a change of key). */
export function resetDetail(): void {
  opener = null;
  closeDetail();
}

function selectJson(): void {
  const range = document.createRange();
  range.selectNodeContents(ui.detailJson);
  const selection = window.getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
}

/** Copies the raw envelope (the JSON shown); without clipboard access, selects it for Ctrl+C. */
async function copyEnvelope(): Promise<void> {
  const text = ui.detailJson.textContent ?? '';
  let copied = false;
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      copied = true;
    }
  } catch {
    copied = false;
  }
  if (!copied) {
    selectJson();
    try {
      copied = document.execCommand('copy');
    } catch {
      copied = false;
    }
  }
  ui.copyStatus.textContent = copied
    ? 'Enveloppe copiée dans le presse-papiers.'
    : 'Copie automatique impossible : le JSON est sélectionné, copiez-le avec Ctrl+C (⌘+C sur Mac).';
}

/** A row's button opens the dialog; its buttons, Escape and a click on the backdrop close it. */
export function setUpDetail(): void {
  ui.detailCopy.addEventListener('click', () => void copyEnvelope());

  ui.dialog.addEventListener('close', () => {
    const target = opener;
    opener = null;
    if (target && target.isConnected) target.focus();
    else ui.feedTitle.focus();
  });
  ui.detailClose.addEventListener('click', closeDetail);
  ui.dialog.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      closeDetail();
    }
  });
  // Un clic sur le fond (hors du contenu) ferme aussi le panneau.
  ui.dialog.addEventListener('click', (e) => {
    if (e.target === ui.dialog) closeDetail();
  });

  ui.list.addEventListener('click', (e) => {
    const button = e.target instanceof Element ? e.target.closest<HTMLElement>('button[data-open]') : null;
    if (button) openDetail(button.dataset.open!, button);
  });
}
