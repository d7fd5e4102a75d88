// The page's elements the view works with (index.html), looked up once, each of the kind it must be.

function byId<T extends HTMLElement>(id: string, kind: new () => T): T {
  const element = document.getElementById(id);
  if (!(element instanceof kind)) throw new Error(`index.html has no ${kind.name} #${id}`);
  return element;
}

export const ui = {
  alert: byId('alert', HTMLElement),
  login: byId('login', HTMLElement),
  loginForm: byId('login-form', HTMLFormElement),
  key: byId('key', HTMLInputElement),
  logout: byId('logout', HTMLButtonElement),
  feed: byId('feed', HTMLElement),
  feedTitle: byId('feed-title', HTMLElement),
  live: byId('live', HTMLInputElement),
  filters: byId('filters', HTMLFormElement),
  typeOptions: byId('type-options', HTMLElement),
  mailboxes: byId('mailboxes', HTMLInputElement),
  filtersClear: byId('filters-clear', HTMLButtonElement),
  status: byId('status', HTMLElement),
  announcer: byId('announcer', HTMLElement),
  count: byId('count', HTMLElement),
  newestRow: byId('newest-row', HTMLElement),
  newest: byId('newest', HTMLButtonElement),
  list: byId('events', HTMLOListElement),
  older: byId('older', HTMLButtonElement),
  dialog: byId('detail', HTMLDialogElement),
  detailClose: byId('detail-close', HTMLButtonElement),
  detailCopy: byId('detail-copy', HTMLButtonElement),
  copyStatus: byId('copy-status', HTMLElement),
  detailSummary: byId('detail-summary', HTMLElement),
  detailJson: byId('detail-json', HTMLElement),
};

/** The type-filter check boxes (buildTypeOptions builds them from the labels). */
export const typeBoxes = (checkedOnly = false) => [
  ...ui.typeOptions.querySelectorAll<HTMLInputElement>(`input[name="types"]${checkedOnly ? ':checked' : ''}`),
];
