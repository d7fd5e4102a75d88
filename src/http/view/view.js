// « Flux des événements » : lit POST /v1/event_feed comme n'importe quel client de l'API.
// La clé ne quitte jamais sessionStorage, le champ mot de passe et l'en-tête Authorization :
// elle n'est ni journalisée ni affichée.
//
// Ordre : celui d'émission (le plus ancien en haut). « Charger plus » et le suivi en direct
// ajoutent tous deux en bas, ce qui garde une seule règle de lecture.

// Les libellés des types d'événements viennent de la liste des types du contrat
// (schemas/event-types.json, servie générée à /event-labels.js).
import { EVENT_HEADINGS_FR } from '/event-labels.js';

const KEY_STORAGE = 'event-feed.key';
const PAGE_LIMIT = 50;
const POLL_MS = 2000;
const MAX_BACKOFF_MS = 30000;
const REQUEST_TIMEOUT_MS = 15000;

const MSG = {
  unauthorized: 'Clé invalide ou révoquée. Saisissez une autre clé.',
  forbidden: 'Cette clé n’a pas la permission de lecture (read).',
  rateLimited: (s) => `Trop de requêtes : nouvel essai dans ${s} s.`,
  badCursor: (m) => `Curseur refusé : ${m}`,
  badRequest: (m) => `Requête refusée : ${m}`,
  unavailable: 'Le service ne répond pas.',
  emptyKey: 'Saisissez une clé d’API.',
};

const $ = (id) => document.getElementById(id);
const ui = {
  alert: $('alert'),
  login: $('login'),
  loginForm: $('login-form'),
  key: $('key'),
  logout: $('logout'),
  feed: $('feed'),
  feedTitle: $('feed-title'),
  live: $('live'),
  status: $('status'),
  list: $('events'),
  more: $('more'),
  dialog: $('detail'),
  detailClose: $('detail-close'),
  detailSummary: $('detail-summary'),
  detailJson: $('detail-json'),
};

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const countFormat = new Intl.NumberFormat(undefined);

/** Everything tied to one key; replaced wholesale on connect and disconnect. */
let generations = 0;
let state = newState();

function newState() {
  generations += 1;
  return {
    generation: generations,
    cursor: undefined,
    seen: new Set(),
    envelopes: new Map(),
    caughtUp: false,
    busy: false,
    controller: null,
    pollTimer: null,
    retryTimer: null,
    notBefore: 0,
    backoffMs: POLL_MS,
  };
}

// ---------------------------------------------------------------- key storage

function readKey() {
  try {
    return sessionStorage.getItem(KEY_STORAGE) || '';
  } catch {
    return '';
  }
}

function saveKey(key) {
  try {
    sessionStorage.setItem(KEY_STORAGE, key);
  } catch {
    /* stockage indisponible : la clé ne vivra que le temps de la page */
  }
  memoryKey = key;
}

function clearKey() {
  try {
    sessionStorage.removeItem(KEY_STORAGE);
  } catch {
    /* rien à effacer */
  }
  memoryKey = '';
}

let memoryKey = readKey();

// ---------------------------------------------------------------- alerts and status

function showAlert(text, action) {
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
    button.addEventListener('click', action.run);
    ui.alert.append(button);
  }
  ui.alert.classList.add('visible');
}

function clearAlert() {
  if (!ui.alert.dataset.text) return;
  ui.alert.replaceChildren();
  delete ui.alert.dataset.text;
  ui.alert.classList.remove('visible');
}

function updateStatus(extra) {
  const n = state.seen.size;
  const parts = [n === 0 ? 'Aucun événement affiché.' : `${countFormat.format(n)} événement${n > 1 ? 's' : ''} affiché${n > 1 ? 's' : ''}.`];
  if (extra) parts.push(extra);
  if (state.caughtUp) parts.push('Vous êtes à jour.');
  if (ui.live.checked) parts.push('Suivi en direct actif.');
  const text = parts.join(' ');
  if (ui.status.textContent !== text) ui.status.textContent = text;
  ui.feed.dataset.caughtUp = String(state.caughtUp);
}

// ---------------------------------------------------------------- rendering

function detailLine(event) {
  const data = event && typeof event.data === 'object' && event.data ? event.data : {};
  const parts = [];
  if (typeof data.subject_line === 'string') parts.push(`Objet : ${data.subject_line || '(sans objet)'}`);
  if (typeof data.recipient === 'string') parts.push(`Destinataire : ${data.recipient}`);
  if (typeof data.diagnostic === 'string') parts.push(`Diagnostic : ${data.diagnostic}`);
  return parts.join(' · ');
}

function personText(event) {
  const person = event.subject?.person ?? {};
  if (person.name && person.email) return `${person.name} <${person.email}>`;
  return person.email || person.name || '—';
}

function typeLabel(type) {
  return Object.hasOwn(EVENT_HEADINGS_FR, type) ? EVENT_HEADINGS_FR[type] : type;
}

function formatTime(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? String(iso) : timeFormat.format(t);
}

function span(className, text) {
  const el = document.createElement('span');
  el.className = className;
  el.textContent = text;
  return el;
}

function renderEvent(event) {
  const li = document.createElement('li');
  li.className = 'event';
  li.dataset.eventId = event.id;
  li.dataset.eventType = event.type;

  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'event-button';
  button.setAttribute('aria-haspopup', 'dialog');
  button.dataset.open = event.id;

  const top = span('event-top', '');
  const badge = span(`badge badge-${String(event.type).replace(/[^a-z]/g, '-')}`, typeLabel(event.type));
  const time = document.createElement('time');
  time.className = 'event-time';
  time.dateTime = event.occurred_at;
  time.textContent = formatTime(event.occurred_at);
  top.append(badge, time);

  const who = span('event-person', personText(event));
  const mailbox = span('event-mailbox', '');
  mailbox.append(span('visually-hidden', 'Boîte : '), span('mailbox-id', event.subject?.refs?.mailbox_id ?? 'aucune boîte'));

  button.append(top, who, mailbox);
  const detail = detailLine(event);
  if (detail) button.append(span('event-detail', detail));
  li.append(button);
  return li;
}

/** Appends the events not shown yet; returns how many were new. */
function appendEvents(events) {
  const atBottom = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48;
  const fragment = document.createDocumentFragment();
  let added = 0;
  for (const event of events) {
    if (!event || typeof event.id !== 'string' || state.seen.has(event.id)) continue;
    state.seen.add(event.id);
    state.envelopes.set(event.id, event);
    fragment.append(renderEvent(event));
    added += 1;
  }
  ui.list.append(fragment);
  return { added, atBottom };
}

// ---------------------------------------------------------------- the API call

class FeedError extends Error {
  constructor(kind, { status = 0, message = '', retryAfter = 0, requestId = '' } = {}) {
    super(kind);
    this.kind = kind;
    this.status = status;
    this.serverMessage = message;
    this.retryAfter = retryAfter;
    this.requestId = requestId;
  }
}

function parseRetryAfter(value) {
  if (!value) return 1;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(1, Math.ceil(seconds));
  const date = Date.parse(value);
  return Number.isNaN(date) ? 1 : Math.max(1, Math.ceil((date - Date.now()) / 1000));
}

async function fetchPage(after) {
  const controller = new AbortController();
  state.controller = controller;
  const timeout = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
  const body = { limit: PAGE_LIMIT };
  if (after !== undefined) body.after = after;
  let response;
  try {
    response = await fetch('/v1/event_feed', {
      method: 'POST',
      headers: { Authorization: `Bearer ${memoryKey}`, 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      signal: controller.signal,
    });
  } catch {
    throw new FeedError('network');
  } finally {
    clearTimeout(timeout);
    if (state.controller === controller) state.controller = null;
  }
  let payload = null;
  try {
    payload = await response.json();
  } catch {
    payload = null;
  }
  if (response.ok && payload && Array.isArray(payload.events) && typeof payload.next_cursor === 'string') {
    return payload;
  }
  const error = payload?.error ?? {};
  const info = { status: response.status, message: String(error.message ?? ''), requestId: String(error.request_id ?? '') };
  if (response.status === 401) throw new FeedError('unauthorized', info);
  if (response.status === 403) throw new FeedError('forbidden', info);
  if (response.status === 429) throw new FeedError('rate_limited', { ...info, retryAfter: parseRetryAfter(response.headers.get('Retry-After')) });
  if (response.status === 400 && error.code === 'invalid_argument' && after !== undefined) throw new FeedError('bad_cursor', info);
  if (response.status >= 400 && response.status < 500) throw new FeedError('bad_request', info);
  throw new FeedError('unavailable', info);
}

/**
 * Reads one page from the saved cursor. Only one read runs at a time: a poll that finds one in
 * flight is skipped, a click waits for it. Returns the number of new events, or null on error.
 */
async function readNext({ fromPoll = false } = {}) {
  const generation = state.generation;
  if (state.busy) {
    if (fromPoll) return null;
    while (state.busy && generation === state.generation) await new Promise((r) => setTimeout(r, 50));
    if (generation !== state.generation) return null;
  }
  state.busy = true;
  ui.feed.setAttribute('aria-busy', 'true');
  ui.more.dataset.loading = 'true';
  try {
    const page = await fetchPage(state.cursor);
    if (generation !== state.generation) return null;
    const previous = state.cursor;
    state.cursor = page.next_cursor;
    // Seule une page vide (le curseur inchangé) dit que tout est lu : une page plus courte que
    // demandé peut s'être arrêtée à la taille maximale d'une page (1 Mio d'événements).
    state.caughtUp = page.events.length === 0 || page.next_cursor === previous;
    let { added, atBottom } = appendEvents(page.events);
    if (!fromPoll && !state.caughtUp && page.events.length < PAGE_LIMIT) {
      // Au clic, une lecture de plus dit s'il reste des événements (le suivi en direct relit de lui-même).
      const next = await fetchPage(state.cursor);
      if (generation !== state.generation) return null;
      const before = state.cursor;
      state.cursor = next.next_cursor;
      state.caughtUp = next.events.length === 0 || next.next_cursor === before;
      const more = appendEvents(next.events);
      added += more.added;
      atBottom = atBottom && more.atBottom;
    }
    state.backoffMs = POLL_MS;
    clearAlert();
    updateStatus(fromPoll && added > 0 ? `${countFormat.format(added)} nouveau${added > 1 ? 'x' : ''}.` : '');
    if (fromPoll && added > 0 && atBottom && !ui.dialog.open) {
      window.scrollTo({ top: document.documentElement.scrollHeight });
    }
    return added;
  } catch (err) {
    if (generation !== state.generation) return null;
    handleError(err instanceof FeedError ? err : new FeedError('unavailable'), fromPoll);
    return null;
  } finally {
    if (generation === state.generation) {
      state.busy = false;
      ui.feed.removeAttribute('aria-busy');
      delete ui.more.dataset.loading;
    }
  }
}

function handleError(err, fromPoll) {
  switch (err.kind) {
    case 'unauthorized':
      disconnect({ message: MSG.unauthorized });
      return;
    case 'forbidden':
      stopLive();
      showAlert(MSG.forbidden);
      return;
    case 'rate_limited': {
      state.notBefore = Date.now() + err.retryAfter * 1000;
      state.backoffMs = POLL_MS; // the server said when: Retry-After, not our own back-off
      showAlert(MSG.rateLimited(err.retryAfter));
      if (!fromPoll) {
        // Une lecture demandée par l'utilisateur est refaite d'elle-même après le délai.
        clearTimeout(state.retryTimer);
        state.retryTimer = setTimeout(() => void readNext(), err.retryAfter * 1000);
      }
      return;
    }
    case 'bad_cursor':
      stopLive();
      showAlert(MSG.badCursor(err.serverMessage || 'curseur non valide'), {
        label: 'Recommencer depuis le début',
        run: restartFromBeginning,
      });
      return;
    case 'bad_request':
      showAlert(MSG.badRequest(err.serverMessage || `erreur ${err.status}`));
      return;
    default:
      state.backoffMs = Math.min(state.backoffMs * 2, MAX_BACKOFF_MS);
      showAlert(err.requestId ? `${MSG.unavailable} Référence : ${err.requestId}` : MSG.unavailable);
  }
}

// ---------------------------------------------------------------- live mode

function scheduleLive(delay) {
  clearTimeout(state.pollTimer);
  if (!ui.live.checked) return;
  const wait = Math.max(delay, state.notBefore - Date.now(), 0);
  state.pollTimer = setTimeout(livePoll, wait);
}

async function livePoll() {
  state.pollTimer = null;
  if (!ui.live.checked) return;
  const generation = state.generation;
  const added = await readNext({ fromPoll: true });
  if (generation !== state.generation || !ui.live.checked) return;
  // Page pleine : il reste sans doute du retard à lire, on enchaîne sans attendre.
  const delay = added === null ? state.backoffMs : state.caughtUp ? POLL_MS : 0;
  scheduleLive(delay);
}

function stopLive() {
  ui.live.checked = false;
  clearTimeout(state.pollTimer);
  state.pollTimer = null;
  updateStatus();
}

ui.live.addEventListener('change', () => {
  if (ui.live.checked) {
    state.backoffMs = POLL_MS;
    scheduleLive(0);
  }
  else stopLive();
  updateStatus();
});

// ---------------------------------------------------------------- detail dialog

let opener = null;

function openDetail(id, trigger) {
  const event = state.envelopes.get(id);
  if (!event) return;
  opener = trigger;
  ui.detailSummary.textContent = `${typeLabel(event.type)} — ${formatTime(event.occurred_at)} — ${event.id}`;
  ui.detailJson.textContent = JSON.stringify(event, null, 2);
  ui.dialog.dataset.eventId = event.id;
  ui.dialog.showModal();
  ui.detailClose.focus();
}

function closeDetail() {
  if (ui.dialog.open) ui.dialog.close();
}

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
  const button = e.target instanceof Element ? e.target.closest('button[data-open]') : null;
  if (button) openDetail(button.dataset.open, button);
});

// ---------------------------------------------------------------- connect / disconnect

function showFeed() {
  ui.login.hidden = true;
  ui.feed.hidden = false;
  ui.logout.hidden = false;
}

function showLogin() {
  ui.feed.hidden = true;
  ui.logout.hidden = true;
  ui.login.hidden = false;
  ui.key.value = '';
}

function resetFeed() {
  if (state.controller) state.controller.abort();
  clearTimeout(state.pollTimer);
  clearTimeout(state.retryTimer);
  state = newState();
  ui.list.replaceChildren();
  ui.live.checked = false;
  ui.status.textContent = '';
  opener = null;
  closeDetail();
}

function connect() {
  resetFeed();
  clearAlert();
  showFeed();
  updateStatus('Chargement…');
  void readNext();
}

function disconnect({ message } = {}) {
  clearKey();
  resetFeed();
  showLogin();
  if (message) showAlert(message);
  else clearAlert();
  ui.key.focus();
}

function restartFromBeginning() {
  const live = ui.live.checked;
  resetFeed();
  clearAlert();
  updateStatus('Chargement…');
  ui.feedTitle.focus();
  void readNext().then(() => {
    if (live) {
      ui.live.checked = true;
      scheduleLive(POLL_MS);
      updateStatus();
    }
  });
}

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

ui.more.addEventListener('click', () => {
  void readNext();
});

// ---------------------------------------------------------------- start

if (memoryKey) connect();
else showLogin();
