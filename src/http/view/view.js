// « Flux des événements » : lit l'API comme n'importe quel client (POST /v1/feed_cursor,
// /v1/list_events, /v1/event_feed). La clé ne quitte jamais sessionStorage, le champ mot de passe
// et l'en-tête Authorization : elle n'est ni journalisée, ni affichée, ni mise dans une adresse.
//
// Ordre : le plus récent en haut.
// - À l'ouverture : le curseur de la tête du flux d'abord (feed_cursor « now »), puis la première
//   page de list_events (les plus récents, filtres appliqués par le service).
// - « Charger plus ancien » : les pages suivantes de list_events (page_token).
// - Suivi en direct : event_feed depuis ce curseur, en attente longue (Prefer: wait=N) ; les
//   nouveaux événements s'ajoutent en haut, dédoublonnés par id (ceux que list_events a déjà
//   donnés reviennent aussi par le flux), filtrés ici avec les mêmes règles que le service.
// - Le nombre d'événements affichés est borné (MAX_ROWS) : le suivi retire les plus anciens (et
//   « Charger plus ancien » repart alors de là), remonter dans le temps retire les plus récents et
//   met le suivi en pause (« Revenir aux plus récents » recharge).

// Les libellés des types d'événements viennent de la liste des types du contrat
// (schemas/event-types.json, servie générée à /event-labels.js).
import { EVENT_HEADINGS_FR } from '/event-labels.js';

const KEY_STORAGE = 'event-feed.key';
/** Events per list_events page (the newest, then older on demand). */
const PAGE_LIMIT = 50;
/** list_events page size while looking for the oldest shown event again (after the tail trimmed). */
const ANCHOR_PAGE_LIMIT = 100;
/** The most events on screen at once: about ten elements each. */
const MAX_ROWS = 300;
const TAIL_LIMIT = 500;
/** Seconds a tail read asks the service to hold it (Prefer: wait=N; the service caps it at 60). */
const LONG_POLL_SECONDS = 25;
/** Without long-poll (no Preference-Applied in the answer: an older service), the pause between reads. */
const FALLBACK_POLL_MS = 500;
const MAX_BACKOFF_MS = 30000;
const REQUEST_TIMEOUT_MS = 15000;
/** A deployment without feed_cursor: at most this many event_feed pages of 500 read to find the head. */
const WALK_MAX_PAGES = 200;
/** New events are announced to screen readers at most this often, as one count. */
const ANNOUNCE_EVERY_MS = 5000;
/** Rate-limited reads are retried after Retry-After, this many times. */
const MAX_RATE_RETRIES = 5;
/** Ids recently shown, so that an event the feed returns again is not shown twice. */
const SEEN_IDS = 5000;
const MAILBOX_ID = /^mbx_[A-Za-z0-9_-]{1,64}$/;
const MAX_MAILBOXES = 100;

const MSG = {
  unauthorized: 'Clé invalide ou révoquée. Saisissez une autre clé.',
  noRead: 'Cette clé n’a pas la permission de lecture (read).',
  forbidden: 'Accès refusé pour cette clé.',
  rateLimited: (s) => `Trop de requêtes : nouvel essai dans ${s} s.`,
  badRequest: 'Requête refusée par le service.',
  internal: 'Erreur interne du service.',
  unavailable: 'Le service ne répond pas.',
  down: 'Le service est momentanément indisponible.',
  emptyKey: 'Saisissez une clé d’API.',
  badMailbox: (id) => `Identifiant de boîte non valide : « ${id} ». Attendu : mbx_ suivi de 1 à 64 lettres, chiffres, _ ou -.`,
  tooManyMailboxes: `Au plus ${MAX_MAILBOXES} boîtes par filtre.`,
  noHead: 'Ce service ne fournit pas la position de la fin du flux (feed_cursor) et le flux est trop long pour la trouver autrement : le suivi en direct est indisponible.',
  anchorLost: 'Impossible de reprendre la lecture de l’historique à cet endroit : les événements les plus récents sont rechargés.',
  retry: 'Réessayer',
  reload: 'Recharger les plus récents',
};

/**
 * The service's English messages the view knows, in French. Unknown ones are shown after a French
 * sentence for their code, never alone.
 */
const KNOWN_MESSAGES = [
  [/^missing or invalid API key/, () => MSG.unauthorized],
  [/^this key lacks the "read" permission/, () => MSG.noRead],
  [/^this key lacks the "([a-z]+)" permission/, (m) => `Cette clé n’a pas la permission « ${m[1]} ».`],
  [/^this key may not read events of mailbox "([^"]*)"/, (m) => `Cette clé ne peut pas lire les événements de la boîte « ${m[1]} » : choisissez parmi les boîtes auxquelles elle est restreinte.`],
  [/^after has expired/, () => 'Le curseur a expiré : les événements qui le suivaient ont dépassé la durée de conservation et ont été supprimés.'],
  [/^after is past the end of this feed/, () => 'Le curseur est au-delà de la fin du flux : la base a été restaurée, ou a basculé sur une copie qui n’avait pas reçu ces événements.'],
  [/^after is not a valid cursor/, () => 'Curseur refusé : il est mal formé, altéré ou émis pour un autre espace.'],
  [/^page_token was issued for other filters/, () => 'Jeton de page émis pour d’autres filtres.'],
  [/^page_token is not valid/, () => 'Jeton de page refusé : il est mal formé ou altéré.'],
  [/^at .*(retention|expired)/, () => 'Cette date est antérieure à la durée de conservation des événements.'],
  [/^occurred_after must not be later than occurred_before/, () => 'La date de début doit précéder la date de fin.'],
  [/must be a valid date-time|is not a representable UTC date-time/, () => 'Date non valide.'],
  [/^mailbox_ids/, () => 'Filtre de boîtes refusé : identifiants mbx_ suivis de 1 à 64 lettres, chiffres, _ ou -, sans doublon, 100 au plus.'],
  [/^types/, () => 'Filtre de types refusé.'],
  [/^request body is over/, () => 'Requête trop volumineuse.'],
  [/too many (held|waiting|pending)/, () => 'Trop de lectures en attente pour cette clé.'],
];

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
  filters: $('filters'),
  typeOptions: $('type-options'),
  mailboxes: $('mailboxes'),
  filtersClear: $('filters-clear'),
  status: $('status'),
  announcer: $('announcer'),
  count: $('count'),
  newestRow: $('newest-row'),
  newest: $('newest'),
  list: $('events'),
  older: $('older'),
  dialog: $('detail'),
  detailClose: $('detail-close'),
  detailCopy: $('detail-copy'),
  copyStatus: $('copy-status'),
  detailSummary: $('detail-summary'),
  detailJson: $('detail-json'),
};

// Dates and numbers in French whatever the browser's language, in the viewer's time zone, named.
const TIME_ZONE = (() => {
  try {
    return new Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
})();
const timeFormat = new Intl.DateTimeFormat('fr-FR', {
  timeZone: TIME_ZONE,
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  timeZoneName: 'short',
});
const countFormat = new Intl.NumberFormat('fr-FR');

/** Everything tied to one key; replaced wholesale on connect and disconnect. */
let state = newState();

function newState() {
  return {
    /** Aborts every request of this key at once. */
    session: new AbortController(),
    /** The feed cursor the live tail reads after. */
    cursor: undefined,
    /** The events on screen, by id (the list shows them newest first). */
    rows: new Map(),
    seen: new Set(),
    /** Where « Charger plus ancien » goes on: a page token, or the oldest shown event to find again. */
    older: { token: null, anchorId: null },
    filters: { types: [], mailboxes: [] },
    /** Bumped by each reload: an answer for an older one is dropped. */
    viewGen: 0,
    /** Bumped when the tail stops: a loop of an older generation ends. */
    tailGen: 0,
    tailing: false,
    tailAbort: null,
    /** Tail events read while the list is being replaced, put on top of it once it is there. */
    pendingTail: [],
    caughtUp: false,
    longPoll: undefined,
    loading: false,
    olderBusy: false,
    walking: false,
    history: false,
    announced: 0,
    pendingAnnounce: 0,
    announceTimer: null,
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

// ---------------------------------------------------------------- alerts, status, announcements

/** Shows an alert (announced); `from` marks one the tail clears itself once it reads again. */
function showAlert(text, action, from) {
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

function clearAlert() {
  delete ui.alert.dataset.from;
  if (!ui.alert.dataset.text) return;
  ui.alert.replaceChildren();
  delete ui.alert.dataset.text;
  ui.alert.classList.remove('visible');
}

const plural = (n, one, many) => `${countFormat.format(n)} ${n > 1 ? many : one}`;

function updateStatus() {
  const parts = [];
  if (state.loading) parts.push('Chargement…');
  else if (ui.live.checked && state.tailing) {
    parts.push(state.caughtUp ? 'Suivi en direct : vous êtes à jour.' : 'Suivi en direct : lecture des nouveaux événements…');
  } else if (ui.live.checked && state.walking) parts.push('Suivi en direct : recherche de la fin du flux…'); else if (state.history) parts.push('Suivi en direct en pause : vous consultez l’historique.');
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
function updateCount() {
  const n = state.rows.size;
  const text = n === 0 ? 'Aucun événement affiché.' : `${plural(n, 'événement affiché', 'événements affichés')}.`;
  if (ui.count.textContent !== text) ui.count.textContent = text;
}

/** Tells screen readers how many events arrived, at most once every ANNOUNCE_EVERY_MS. */
function announce(n) {
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

// ---------------------------------------------------------------- rendering

function formatTime(iso) {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? String(iso) : timeFormat.format(t);
}

function detailLine(event) {
  const data = event && typeof event.data === 'object' && event.data ? event.data : {};
  const parts = [];
  if (typeof data.subject_line === 'string') parts.push(`Objet : ${data.subject_line || '(sans objet)'}`);
  if (typeof data.recipient === 'string') parts.push(`Destinataire : ${data.recipient}`);
  if (typeof data.diagnostic === 'string') parts.push(`Diagnostic : ${data.diagnostic}`);
  if (typeof data.size_bytes === 'number') parts.push(`Taille : ${countFormat.format(data.size_bytes)} octets`);
  if (typeof data.delivery_ms === 'number') parts.push(`Délai : ${countFormat.format(data.delivery_ms)} ms`);
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

const isEnvelope = (event) => !!event && typeof event.id === 'string' && typeof event.type === 'string';

function remember(id) {
  state.seen.add(id);
  if (state.seen.size > SEEN_IDS) state.seen.delete(state.seen.values().next().value);
}

/** The active filters, applied to the tail as the service applies them to list_events. */
function matchesFilters(event) {
  const { types, mailboxes } = state.filters;
  if (types.length && !types.includes(event.type)) return false;
  if (mailboxes.length && !mailboxes.includes(event.subject?.refs?.mailbox_id)) return false;
  return true;
}

/** Replaces what is shown by a first page of list_events (newest first). */
function replaceRows(events) {
  state.rows.clear();
  const fragment = document.createDocumentFragment();
  for (const event of events) {
    if (!isEnvelope(event) || state.rows.has(event.id)) continue;
    state.rows.set(event.id, event);
    remember(event.id);
    fragment.append(renderEvent(event));
    if (state.rows.size >= MAX_ROWS) break;
  }
  ui.list.replaceChildren(fragment);
}

/**
 * Puts newer events (in emission order) on top. With `anchored`, only those after the newest
 * event shown, when it is among them. Returns how many were added.
 */
function insertNewer(events, { anchored = false } = {}) {
  let fresh = events;
  if (anchored) {
    const top = ui.list.firstElementChild?.dataset.eventId;
    const at = top ? events.findIndex((e) => e && e.id === top) : -1;
    if (at >= 0) fresh = events.slice(at + 1);
  }
  fresh = fresh.filter((e) => isEnvelope(e) && !state.rows.has(e.id) && !state.seen.has(e.id) && matchesFilters(e));
  if (fresh.length === 0) return 0;
  if (fresh.length > MAX_ROWS) fresh = fresh.slice(-MAX_ROWS);
  const fragment = document.createDocumentFragment();
  let added = 0;
  for (let i = fresh.length - 1; i >= 0; i--) {
    const event = fresh[i];
    if (state.rows.has(event.id)) continue;
    state.rows.set(event.id, event);
    remember(event.id);
    fragment.append(renderEvent(event));
    added += 1;
  }
  ui.list.prepend(fragment);
  trimOldest();
  announce(added);
  updateCount();
  return added;
}

/** Past MAX_ROWS, the tail drops the oldest shown; « Charger plus ancien » finds the new oldest again. */
function trimOldest() {
  if (state.rows.size <= MAX_ROWS) return;
  while (state.rows.size > MAX_ROWS) {
    const li = ui.list.lastElementChild;
    state.rows.delete(li.dataset.eventId);
    li.remove();
  }
  state.older = { token: null, anchorId: ui.list.lastElementChild?.dataset.eventId ?? null };
  updateStatus();
}

/** Appends older events (newest first); going past MAX_ROWS drops the newest and pauses the tail. */
function appendOlder(events) {
  const fragment = document.createDocumentFragment();
  let added = 0;
  for (const event of events) {
    if (!isEnvelope(event) || state.rows.has(event.id)) continue;
    state.rows.set(event.id, event);
    remember(event.id);
    fragment.append(renderEvent(event));
    added += 1;
  }
  ui.list.append(fragment);
  if (state.rows.size > MAX_ROWS) {
    stopTail();
    ui.live.checked = false;
    state.history = true;
    while (state.rows.size > MAX_ROWS) {
      const li = ui.list.firstElementChild;
      state.rows.delete(li.dataset.eventId);
      li.remove();
    }
  }
  updateCount();
  return added;
}

// ---------------------------------------------------------------- the API

class FeedError extends Error {
  constructor(kind, { status = 0, code = '', message = '', retryAfter = 0, requestId = '' } = {}) {
    super(kind);
    this.kind = kind;
    this.status = status;
    this.code = code;
    this.serverMessage = message;
    this.retryAfter = retryAfter;
    this.requestId = requestId;
  }
}

function parseRetryAfter(value) {
  if (!value) return 1;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.min(3600, Math.max(1, Math.ceil(seconds)));
  const date = Date.parse(value);
  return Number.isNaN(date) ? 1 : Math.min(3600, Math.max(1, Math.ceil((date - Date.now()) / 1000)));
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * One POST /v1/<operation>. Returns the JSON body and whether the service held the read
 * (Preference-Applied); throws a FeedError whose kind is the contract's error code, `not_found`
 * (an operation this deployment does not have), `network` or `aborted`.
 */
async function call(operation, body, { signal = state.session.signal, wait, timeoutMs = REQUEST_TIMEOUT_MS } = {}) {
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (signal.aborted) throw new FeedError('aborted');
  signal.addEventListener('abort', abort, { once: true });
  const timer = setTimeout(abort, timeoutMs);
  const headers = { Authorization: `Bearer ${memoryKey}`, 'Content-Type': 'application/json', Accept: 'application/json' };
  if (wait) headers.Prefer = `wait=${wait}`;
  try {
    let response;
    try {
      response = await fetch(`/v1/${operation}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        cache: 'no-store',
        credentials: 'omit',
        signal: controller.signal,
      });
    } catch {
      throw new FeedError(signal.aborted ? 'aborted' : 'network');
    }
    let payload = null;
    try {
      payload = await response.json();
    } catch {
      if (signal.aborted) throw new FeedError('aborted');
      payload = null;
    }
    if (response.ok && payload && typeof payload === 'object') {
      return { payload, longPoll: /\bwait\s*=/i.test(response.headers.get('Preference-Applied') ?? '') };
    }
    const error = payload?.error ?? {};
    const info = {
      status: response.status,
      code: String(error.code ?? ''),
      message: String(error.message ?? ''),
      requestId: String(error.request_id ?? response.headers.get('X-Request-Id') ?? ''),
      retryAfter: parseRetryAfter(response.headers.get('Retry-After')),
    };
    if (response.status === 404) throw new FeedError('not_found', info);
    if (response.status === 401) throw new FeedError('unauthorized', info);
    if (response.status === 403) throw new FeedError('forbidden', info);
    if (response.status === 429) throw new FeedError('rate_limited', info);
    if (response.status >= 400 && response.status < 500) throw new FeedError('invalid_argument', info);
    throw new FeedError('internal', info);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', abort);
  }
}

/** call(), waiting out a 429 (Retry-After, said in French) a few times before giving up. */
async function request(operation, body, options = {}) {
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await call(operation, body, options);
      if (attempt > 0) clearAlert();
      return result;
    } catch (err) {
      if (!(err instanceof FeedError) || err.kind !== 'rate_limited' || attempt >= MAX_RATE_RETRIES) throw err;
      showAlert(MSG.rateLimited(err.retryAfter));
      const signal = options.signal ?? state.session.signal;
      await sleep(err.retryAfter * 1000, signal);
      if (signal.aborted) throw new FeedError('aborted');
    }
  }
}

/** The French text for an error: never the service's English alone. */
function frenchError(err) {
  if (!(err instanceof FeedError)) return MSG.unavailable;
  const message = err.serverMessage;
  for (const [pattern, text] of KNOWN_MESSAGES) {
    const m = pattern.exec(message);
    if (m) return text(m);
  }
  let base;
  switch (err.kind) {
    case 'unauthorized':
      return MSG.unauthorized;
    case 'forbidden':
      base = MSG.forbidden;
      break;
    case 'rate_limited':
      return MSG.rateLimited(err.retryAfter);
    case 'invalid_argument':
    case 'not_found':
      base = MSG.badRequest;
      break;
    case 'network':
      return MSG.unavailable;
    default:
      base = err.status === 503 ? MSG.down : MSG.internal;
      if (err.requestId) base += ` Référence : ${err.requestId}.`;
      return base;
  }
  return message ? `${base} (Détail du service, en anglais : « ${message.slice(0, 300)} ».)` : base;
}

function listBody(limit, pageToken) {
  const body = { limit };
  if (state.filters.types.length) body.types = state.filters.types;
  if (state.filters.mailboxes.length) body.mailbox_ids = state.filters.mailboxes;
  if (pageToken) body.page_token = pageToken;
  return body;
}

function isFeedPage(payload) {
  return Array.isArray(payload?.events) && typeof payload.next_cursor === 'string';
}

function isListPage(payload) {
  return Array.isArray(payload?.events) && (payload.next_page_token === undefined || payload.next_page_token === null || typeof payload.next_page_token === 'string');
}

function malformed() {
  return new FeedError('internal', { message: '' });
}

/**
 * For a deployment without feed_cursor (it answers 404): the head's cursor, by reading event_feed
 * pages of 500 from `after` without rendering them. Bounded: at most WALK_MAX_PAGES pages (100,000
 * events, a few seconds on this service; a rate limit stretches it); past that, no live tail.
 * Returns the last page read too, which holds what arrived while list_events was answering.
 */
async function walkToHead(after) {
  let recent = [];
  for (let page = 0; page < WALK_MAX_PAGES; page++) {
    let payload;
    try {
      ({ payload } = await request('event_feed', after === undefined ? { limit: TAIL_LIMIT } : { after, limit: TAIL_LIMIT }));
    } catch (err) {
      // A cursor kept from before a pause may have expired: start again from the oldest event.
      if (err instanceof FeedError && err.kind === 'invalid_argument' && after !== undefined && page === 0) {
        after = undefined;
        continue;
      }
      throw err;
    }
    if (!isFeedPage(payload)) throw malformed();
    if (payload.events.length > 0) recent = payload.events;
    const end = payload.events.length === 0 || payload.next_cursor === after;
    after = payload.next_cursor;
    if (end) return { cursor: after, recent };
  }
  throw new FeedError('no_head');
}

// ---------------------------------------------------------------- loading

function setLoading(loading) {
  state.loading = loading;
  if (loading) ui.feed.setAttribute('aria-busy', 'true');
  else ui.feed.removeAttribute('aria-busy');
  updateStatus();
}

/**
 * Shows the newest events. With `freshCursor`, first takes the head's cursor (before listing: what
 * arrives in between comes through the tail, and twice is deduplicated) and starts the tail when
 * live; without it, a running tail goes on from its cursor (a change of filters).
 */
async function loadNewest({ freshCursor = true } = {}) {
  const current = state;
  const gen = ++current.viewGen;
  const stale = () => current !== state || gen !== current.viewGen;
  const live = ui.live.checked;
  if (freshCursor) stopTail();
  current.history = false;
  current.olderBusy = false;
  current.pendingTail = [];
  delete ui.older.dataset.loading;
  setLoading(true);
  try {
    let walkFrom = null;
    if (live && freshCursor) {
      try {
        const { payload } = await request('feed_cursor', { at: 'now' });
        if (typeof payload.cursor !== 'string') throw malformed();
        if (stale()) return;
        current.cursor = payload.cursor;
      } catch (err) {
        if (!(err instanceof FeedError) || err.kind !== 'not_found') throw err;
        walkFrom = { after: current.cursor };
      }
    }
    const { payload } = await request('list_events', listBody(PAGE_LIMIT));
    if (stale()) return;
    if (!isListPage(payload)) throw malformed();
    replaceRows(payload.events);
    current.older = { token: payload.next_page_token ?? null, anchorId: null };
    clearAlert();
    setLoading(false);
    const pending = current.pendingTail;
    current.pendingTail = [];
    insertNewer(pending);
    if (walkFrom) {
      current.walking = true;
      updateStatus();
      const { cursor, recent } = await walkToHead(walkFrom.after).finally(() => (current.walking = false));
      if (stale()) return;
      current.cursor = cursor;
      insertNewer(recent, { anchored: true });
    }
    if (ui.live.checked && !current.tailing) startTail();
    updateStatus();
  } catch (err) {
    if (stale()) return;
    setLoading(false);
    handleError(err, () => void loadNewest({ freshCursor: true }));
  }
}

/**
 * Finds the oldest shown event again in list_events (newest first, same filters) after the tail
 * dropped what was below it: the events after it in that page, and the token that goes on.
 */
async function findAnchor(anchorId, stale) {
  let token;
  const pages = Math.ceil((MAX_ROWS * 4) / ANCHOR_PAGE_LIMIT);
  for (let page = 0; page < pages; page++) {
    const { payload } = await request('list_events', listBody(ANCHOR_PAGE_LIMIT, token));
    if (stale()) return null;
    if (!isListPage(payload)) throw malformed();
    const at = payload.events.findIndex((e) => e && e.id === anchorId);
    if (at >= 0) return { events: payload.events.slice(at + 1), token: payload.next_page_token ?? null };
    token = payload.next_page_token;
    if (!token) return null;
  }
  return null;
}

async function loadOlder() {
  const current = state;
  if (current.olderBusy || current.loading) return;
  const gen = current.viewGen;
  const stale = () => current !== state || gen !== current.viewGen;
  current.olderBusy = true;
  ui.older.dataset.loading = 'true';
  ui.feed.setAttribute('aria-busy', 'true');
  try {
    let added = 0;
    // A page may come back empty while more match (list_events stopped looking): go on a little.
    for (let round = 0; round < 10 && added === 0; round++) {
      const older = current.older;
      if (older.anchorId) {
        const found = await findAnchor(older.anchorId, stale);
        if (stale()) return;
        if (current.older !== older) continue; // the tail moved the bottom meanwhile
        if (!found) {
          showAlert(MSG.anchorLost);
          void loadNewest({ freshCursor: !current.tailing });
          return;
        }
        added += appendOlder(found.events);
        current.older = { token: found.token, anchorId: null };
      } else if (older.token) {
        const { payload } = await request('list_events', listBody(PAGE_LIMIT, older.token));
        if (stale()) return;
        if (!isListPage(payload)) throw malformed();
        if (current.older !== older) continue;
        added += appendOlder(payload.events);
        current.older = { token: payload.next_page_token ?? null, anchorId: null };
      } else break;
    }
    clearAlert();
  } catch (err) {
    if (stale()) return;
    handleError(err, () => void loadOlder());
  } finally {
    if (!stale()) {
      current.olderBusy = false;
      delete ui.older.dataset.loading;
      if (!current.loading) ui.feed.removeAttribute('aria-busy');
      updateStatus();
    }
  }
}

function handleError(err, retry) {
  if (!(err instanceof FeedError)) err = new FeedError('internal');
  switch (err.kind) {
    case 'aborted':
      return;
    case 'unauthorized':
      disconnect({ message: MSG.unauthorized });
      return;
    case 'no_head':
      stopTail();
      ui.live.checked = false;
      updateStatus();
      showAlert(MSG.noHead);
      return;
    case 'forbidden':
    case 'invalid_argument':
    case 'not_found':
      showAlert(frenchError(err), { label: MSG.reload, run: () => void loadNewest({ freshCursor: true }) });
      return;
    default:
      showAlert(frenchError(err), { label: MSG.retry, run: retry });
  }
}

// ---------------------------------------------------------------- live tail

/** Starts the tail at the head's cursor, just taken: caught up until a read says otherwise. */
function startTail() {
  const gen = ++state.tailGen;
  state.tailing = true;
  state.caughtUp = true;
  void tailLoop(state, gen);
  updateStatus();
}

function stopTail() {
  state.tailGen += 1;
  state.tailing = false;
  state.caughtUp = false;
  if (state.tailAbort) state.tailAbort.abort();
  state.tailAbort = null;
}

/**
 * Reads event_feed after the cursor, one read at a time: held by the service until something
 * arrives (Prefer: wait), or, when the answer says it was not held, again after FALLBACK_POLL_MS.
 */
async function tailLoop(current, gen) {
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
      const { payload, longPoll } = await call('event_feed', { after: current.cursor, limit: TAIL_LIMIT }, {
        signal: controller.signal,
        wait: LONG_POLL_SECONDS,
        timeoutMs: (LONG_POLL_SECONDS + 15) * 1000,
      });
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
      if (ui.alert.dataset.from === 'tail') clearAlert();
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
        void loadNewest({ freshCursor: true });
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

ui.live.addEventListener('change', () => {
  if (ui.live.checked) {
    clearAlert();
    void loadNewest({ freshCursor: true });
  } else {
    stopTail();
    updateStatus();
  }
});

ui.newest.addEventListener('click', () => {
  ui.live.checked = true;
  clearAlert();
  void loadNewest({ freshCursor: true });
  ui.feedTitle.focus();
});

// ---------------------------------------------------------------- filters

function buildTypeOptions() {
  const fragment = document.createDocumentFragment();
  for (const type of Object.keys(EVENT_HEADINGS_FR)) {
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
function readFilters() {
  const types = [...ui.typeOptions.querySelectorAll('input[name="types"]:checked')].map((box) => box.value);
  const mailboxes = [...new Set(ui.mailboxes.value.split(/[\s,;]+/).filter(Boolean))];
  const bad = mailboxes.find((id) => !MAILBOX_ID.test(id));
  if (bad !== undefined) throw new Error(MSG.badMailbox(bad.slice(0, 80)));
  if (mailboxes.length > MAX_MAILBOXES) throw new Error(MSG.tooManyMailboxes);
  return { types, mailboxes };
}

function applyFilters() {
  let filters;
  try {
    filters = readFilters();
  } catch (err) {
    showAlert(err.message);
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

ui.filters.addEventListener('submit', (e) => {
  e.preventDefault();
  applyFilters();
});

ui.filtersClear.addEventListener('click', () => {
  for (const box of ui.typeOptions.querySelectorAll('input[name="types"]')) box.checked = false;
  ui.mailboxes.value = '';
  applyFilters();
});

// ---------------------------------------------------------------- detail dialog

let opener = null;

function openDetail(id, trigger) {
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

function closeDetail() {
  if (ui.dialog.open) ui.dialog.close();
}

function selectJson() {
  const range = document.createRange();
  range.selectNodeContents(ui.detailJson);
  const selection = window.getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
}

/** Copies the raw envelope (the JSON shown); without clipboard access, selects it for Ctrl+C. */
async function copyEnvelope() {
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
  stopTail();
  state.session.abort();
  clearTimeout(state.announceTimer);
  state = newState();
  ui.list.replaceChildren();
  ui.live.checked = true;
  ui.status.textContent = '';
  ui.announcer.textContent = '';
  ui.count.textContent = '';
  for (const box of ui.typeOptions.querySelectorAll('input[name="types"]')) box.checked = false;
  ui.mailboxes.value = '';
  ui.mailboxes.removeAttribute('aria-invalid');
  ui.feed.removeAttribute('aria-busy');
  delete ui.older.dataset.loading;
  opener = null;
  closeDetail();
}

function connect() {
  resetFeed();
  clearAlert();
  showFeed();
  void loadNewest({ freshCursor: true });
}

function disconnect({ message } = {}) {
  clearKey();
  resetFeed();
  showLogin();
  if (message) showAlert(message);
  else clearAlert();
  ui.key.focus();
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

ui.older.addEventListener('click', () => void loadOlder());

// ---------------------------------------------------------------- start

buildTypeOptions();
if (memoryKey) connect();
else showLogin();
