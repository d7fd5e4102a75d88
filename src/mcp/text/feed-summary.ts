import type { StoredPage } from '../../store/port.ts';
import { frenchCount, timeBounds, typeBreakdown } from './french.ts';

/**
 * The French text an assistant shows a person for one page of the feed: how many events, of which
 * types, over which time span, whether the client is caught up, and the cursor to continue. Made
 * from the page's facts (each event's type and time), not from its parsed envelopes.
 */
export function summarizeFeedPage(page: StoredPage, nextCursor: string, limit: number): string {
  if (page.count === 0) {
    return `Aucun nouvel événement : vous êtes à jour.\nCurseur pour la suite (after) : ${nextCursor}`;
  }
  const facts = page.facts!;
  const { oldest: first, newest: last } = timeBounds(facts);
  const span = first === last ? `le ${first} (UTC)` : `du ${first} au ${last} (UTC)`;
  const caughtUp =
    page.count < limit && !page.cutAtByteCap
      ? 'Vous êtes à jour : il n’y avait pas d’autre événement au moment de la lecture.'
      : 'D’autres événements peuvent suivre : rappelez event_feed avec ce curseur.';
  return [
    `${frenchCount(page.count, 'événement', 'événements')}, ${span}, dans l’ordre d’émission :`,
    typeBreakdown(facts),
    caughtUp,
    `Curseur pour la suite (after) : ${nextCursor}`,
  ].join('\n');
}
