import type { ListEventsRequest } from '../../../generated/types.ts';
import type { EventFacts } from '../../store/port.ts';
import { frenchCount, timeBounds, typeBreakdown } from './french.ts';

/** What the text needs of a list_events page: how many events, their facts, the token to go on (null: the end). */
export interface ListPageFacts {
  count: number;
  facts: EventFacts;
  next_page_token: string | null;
}

/**
 * The French text an assistant shows a person for one page of list_events: how many events, the
 * most recent and oldest times, the breakdown by type, and whether an older page exists and how to
 * get it (same filters, page_token).
 */
export function summarizeListPage(page: ListPageFacts, input: ListEventsRequest): string {
  const { count, facts, next_page_token } = page;
  const filters = describeFilters(input);
  const goOn = `rappelez list_events avec les mêmes filtres et page_token = ${next_page_token}`;
  if (count === 0) {
    // A call examines a bounded part of the workspace: an empty page with a token is not the end.
    if (next_page_token)
      return `Aucun événement trouvé dans la partie parcourue${filters ? ` (${filters})` : ''} ; la recherche n’est pas finie : ${goOn}`;
    const none = input.page_token === undefined ? 'Aucun événement ne correspond' : 'Aucun événement plus ancien ne correspond';
    return `${none}${filters ? ` aux filtres (${filters})` : ''}.`;
  }
  const { newest, oldest } = timeBounds(facts);
  const when =
    newest !== oldest
      ? `Le plus récent est survenu le ${newest}, le plus ancien le ${oldest} (UTC).`
      : count === 1
        ? `Survenu le ${newest} (UTC).`
        : `Tous survenus le ${newest} (UTC).`;
  const more = next_page_token
    ? `D’autres événements plus anciens peuvent correspondre : ${goOn}`
    : `Il n’y a pas d’événement plus ancien${filters ? ' correspondant à ces filtres' : ''}.`;
  const order = count > 1 ? ', du plus récent au plus ancien' : '';
  return [
    `${frenchCount(count, 'événement', 'événements')}${filters ? ` (${filters})` : ''}${order}.`,
    when,
    'Par type :',
    typeBreakdown(facts),
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
