import type { EventFeedResponse } from '../../../generated/types.ts';
import { frenchCount, timeBounds, typeBreakdown } from './french.ts';

/**
 * The French text an assistant shows a person for one page of the feed: how many events, of which
 * types, over which time span, whether the client is caught up, and the cursor to continue.
 */
export function summarizeFeedPage(page: EventFeedResponse, limit: number): string {
  const { events, next_cursor } = page;
  if (events.length === 0) {
    return `Aucun nouvel événement : vous êtes à jour.\nCurseur pour la suite (after) : ${next_cursor}`;
  }
  const { oldest: first, newest: last } = timeBounds(events);
  const span = first === last ? `le ${first} (UTC)` : `du ${first} au ${last} (UTC)`;
  const caughtUp =
    events.length < limit
      ? 'Vous êtes à jour : il n’y avait pas d’autre événement au moment de la lecture.'
      : 'D’autres événements peuvent suivre : rappelez event_feed avec ce curseur.';
  return [
    `${frenchCount(events.length, 'événement', 'événements')}, ${span}, dans l’ordre d’émission :`,
    typeBreakdown(events),
    caughtUp,
    `Curseur pour la suite (after) : ${next_cursor}`,
  ].join('\n');
}
