import type { EventFeedResponse, EventType } from '../../generated/types.ts';

/** How a person reads each event type, in French. */
export const FRENCH_TYPE_LABELS: Record<EventType, string> = {
  'mail.received': 'message reçu',
  'mail.sent': 'message envoyé',
  'mail.delivered': 'message distribué',
  'mail.deferred': 'distribution différée',
  'mail.bounced': 'message rejeté par le destinataire (rebond)',
  'mail.complained': 'plainte pour spam',
  'mail.rejected': 'message refusé',
};

const dateFormat = new Intl.DateTimeFormat('fr-FR', { dateStyle: 'long', timeStyle: 'medium', timeZone: 'UTC' });
const plural = (n: number, one: string, many: string) => `${n.toLocaleString('fr-FR')} ${n > 1 ? many : one}`;

/**
 * The French text an assistant shows a person for one page of the feed: how many events, of which
 * types, over which time span, whether the client is caught up, and the cursor to continue.
 */
export function summarizeFeedPage(page: EventFeedResponse, limit: number): string {
  const { events, next_cursor } = page;
  if (events.length === 0) {
    return `Aucun nouvel événement : vous êtes à jour.\nCurseur pour la suite (after) : ${next_cursor}`;
  }
  const counts = new Map<string, number>();
  for (const event of events) counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
  const breakdown = [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([type, n]) => `- ${type} (${FRENCH_TYPE_LABELS[type as EventType] ?? type}) : ${n.toLocaleString('fr-FR')}`)
    .join('\n');
  const times = events.map((event) => Date.parse(event.occurred_at));
  const first = dateFormat.format(Math.min(...times));
  const last = dateFormat.format(Math.max(...times));
  const span = first === last ? `le ${first} (UTC)` : `du ${first} au ${last} (UTC)`;
  const caughtUp =
    events.length < limit
      ? 'Vous êtes à jour : il n’y avait pas d’autre événement au moment de la lecture.'
      : 'D’autres événements peuvent suivre : rappelez event_feed avec ce curseur.';
  return [
    `${plural(events.length, 'événement', 'événements')}, ${span}, dans l’ordre d’émission :`,
    breakdown,
    caughtUp,
    `Curseur pour la suite (after) : ${next_cursor}`,
  ].join('\n');
}
