import type { EventEnvelope, EventType } from '../../../generated/types.ts';

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

export const frenchCount = (n: number, one: string, many: string) => `${n.toLocaleString('fr-FR')} ${n > 1 ? many : one}`;

/** One line per type, most frequent first: `- mail.sent (message envoyé) : 3`. */
export function typeBreakdown(events: readonly EventEnvelope[]): string {
  const counts = new Map<string, number>();
  for (const event of events) counts.set(event.type, (counts.get(event.type) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([type, n]) => `- ${type} (${FRENCH_TYPE_LABELS[type as EventType] ?? type}) : ${n.toLocaleString('fr-FR')}`)
    .join('\n');
}

/** The oldest and newest occurred_at of a non-empty list, as French UTC dates. */
export function timeBounds(events: readonly EventEnvelope[]): { oldest: string; newest: string } {
  const times = events.map((event) => Date.parse(event.occurred_at));
  return { oldest: dateFormat.format(Math.min(...times)), newest: dateFormat.format(Math.max(...times)) };
}
