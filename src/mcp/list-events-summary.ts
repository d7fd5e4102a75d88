import type { EventType, ListEventsRequest, ListEventsResponse } from '../../generated/types.ts';
import { FRENCH_TYPE_LABELS } from './french-summary.ts';

const dateFormat = new Intl.DateTimeFormat('fr-FR', { dateStyle: 'long', timeStyle: 'medium', timeZone: 'UTC' });
const count = (n: number, one: string, many: string) => `${n.toLocaleString('fr-FR')} ${n > 1 ? many : one}`;

/**
 * The French text an assistant shows a person for one page of list_events: how many events, the
 * most recent and oldest times, the breakdown by type, and whether an older page exists and how to
 * get it (same filters, page_token).
 */
export function summarizeListPage(page: ListEventsResponse, input: ListEventsRequest): string {
  const { events, next_page_token } = page;
  const filters = describeFilters(input);
  if (events.length === 0) {
    const none = input.page_token === undefined ? 'Aucun événement ne correspond' : 'Aucun événement plus ancien ne correspond';
    return `${none}${filters ? ` aux filtres (${filters})` : ''}.`;
  }
  const counts = new Map<string, number>();
  for (const event of events) counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
  const breakdown = [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([type, n]) => `- ${type} (${FRENCH_TYPE_LABELS[type as EventType] ?? type}) : ${n.toLocaleString('fr-FR')}`)
    .join('\n');
  const times = events.map((event) => Date.parse(event.occurred_at));
  const newest = dateFormat.format(Math.max(...times));
  const oldest = dateFormat.format(Math.min(...times));
  const when =
    newest !== oldest
      ? `Le plus récent est survenu le ${newest}, le plus ancien le ${oldest} (UTC).`
      : events.length === 1
        ? `Survenu le ${newest} (UTC).`
        : `Tous survenus le ${newest} (UTC).`;
  const more = next_page_token
    ? `D’autres événements plus anciens correspondent : rappelez list_events avec les mêmes filtres et page_token = ${next_page_token}`
    : `Il n’y a pas d’événement plus ancien${filters ? ' correspondant à ces filtres' : ''}.`;
  const order = events.length > 1 ? ', du plus récent au plus ancien' : '';
  return [
    `${count(events.length, 'événement', 'événements')}${filters ? ` (${filters})` : ''}${order}.`,
    when,
    'Par type :',
    breakdown,
    more,
  ].join('\n');
}

function describeFilters(input: ListEventsRequest): string {
  const parts: string[] = [];
  if (input.types) parts.push(`types : ${input.types.join(', ')}`);
  if (input.mailbox_ids) parts.push(`${input.mailbox_ids.length > 1 ? 'boîtes' : 'boîte'} : ${input.mailbox_ids.join(', ')}`);
  if (input.occurred_after) parts.push(`depuis ${input.occurred_after}`);
  if (input.occurred_before) parts.push(`avant ${input.occurred_before}`);
  return parts.join(' ; ');
}
