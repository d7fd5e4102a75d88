// The filters: types (one check box per type of the contract) and mailboxes (ids typed in),
// applied by the service to list_events and by insertNewer to the tail.
import { clearAlert, showAlert } from './alerts.ts';
import { typeBoxes, ui } from './dom.ts';
import { EVENT_TYPES, typeLabel } from './labels.ts';
import { MAX_MAILBOXES } from './limits.ts';
import { loadNewest } from './load-newest.ts';
import { MSG } from './messages.ts';
import { state, type Filters } from './state.ts';

const MAILBOX_ID = /^mbx_[A-Za-z0-9_-]{1,64}$/;

export function buildTypeOptions(): void {
  const fragment = document.createDocumentFragment();
  for (const type of EVENT_TYPES) {
    const label = document.createElement('label');
    label.className = 'type-option';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.name = 'types';
    box.value = type;
    label.append(box, document.createTextNode(` ${typeLabel(type)}`));
    fragment.append(label);
  }
  ui.typeOptions.replaceChildren(fragment);
}

/** The filters as typed; throws a French message for a mailbox id the contract would refuse. */
function readFilters(): Filters {
  const types = typeBoxes(true).map((box) => box.value);
  const mailboxes = [...new Set(ui.mailboxes.value.split(/[\s,;]+/).filter(Boolean))];
  const bad = mailboxes.find((id) => !MAILBOX_ID.test(id));
  if (bad !== undefined) throw new Error(MSG.badMailbox(bad.slice(0, 80)));
  if (mailboxes.length > MAX_MAILBOXES) throw new Error(MSG.tooManyMailboxes);
  return { types, mailboxes };
}

function applyFilters(): void {
  let filters: Filters;
  try {
    filters = readFilters();
  } catch (err) {
    showAlert((err as Error).message);
    ui.mailboxes.setAttribute('aria-invalid', 'true');
    ui.mailboxes.focus();
    return;
  }
  ui.mailboxes.removeAttribute('aria-invalid');
  clearAlert();
  state.filters = filters;
  state.seen.clear();
  void loadNewest({ freshCursor: !state.tailing });
}

export function setUpFilters(): void {
  ui.filters.addEventListener('submit', (e) => {
    e.preventDefault();
    applyFilters();
  });

  ui.filtersClear.addEventListener('click', () => {
    for (const box of typeBoxes()) box.checked = false;
    ui.mailboxes.value = '';
    applyFilters();
  });
}
