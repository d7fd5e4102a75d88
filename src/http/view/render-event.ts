// One event as a row of the list: a button (it opens the detail) with its type, time, person,
// mailbox and a line of details. Text only (textContent): nothing of an event is read as HTML.
import type { EventEnvelope } from './api-types.ts';
import { ERASED_FR, shown } from './erased.ts';
import { countFormat, formatTime } from './french-format.ts';
import { typeLabel } from './labels.ts';

/** The details worth a glance, from whichever of them the event's data has. */
function detailLine(event: EventEnvelope): string {
  const data: Partial<Record<string, unknown>> = typeof event.data === 'object' && event.data ? event.data : {};
  const parts: string[] = [];
  if (typeof data.subject_line === 'string') parts.push(`Objet : ${shown(data.subject_line) || '(sans objet)'}`);
  if (typeof data.recipient === 'string') parts.push(`Destinataire : ${shown(data.recipient)}`);
  if (typeof data.diagnostic === 'string') parts.push(`Diagnostic : ${shown(data.diagnostic)}`);
  if (typeof data.size_bytes === 'number') parts.push(`Taille : ${countFormat.format(data.size_bytes)} octets`);
  if (typeof data.delivery_ms === 'number') parts.push(`Délai : ${countFormat.format(data.delivery_ms)} ms`);
  return parts.join(' · ');
}

function personText(event: EventEnvelope): string {
  const person: Partial<EventEnvelope['subject']['person']> = event.subject?.person ?? {};
  const email = person.email && shown(person.email);
  const name = person.name && shown(person.name);
  // An erased person: « effacé » once, not a name and an address both erased.
  if (email === ERASED_FR && (!name || name === ERASED_FR)) return `Personne ${ERASED_FR}`;
  if (name && email) return `${name} <${email}>`;
  return email || name || '—';
}

function span(className: string, text: string): HTMLSpanElement {
  const el = document.createElement('span');
  el.className = className;
  el.textContent = text;
  return el;
}

export function renderEvent(event: EventEnvelope): HTMLLIElement {
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
