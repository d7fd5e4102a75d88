import type { EventType } from '../../../generated/types.ts';
import type { EventFacts } from '../../store/port.ts';

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
export function typeBreakdown(facts: EventFacts): string {
  const counts = new Map<string, number>();
  for (const type of facts.types) counts.set(type, (counts.get(type) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([type, n]) => `- ${type} (${FRENCH_TYPE_LABELS[type as EventType] ?? type}) : ${n.toLocaleString('fr-FR')}`)
    .join('\n');
}

/** The oldest and newest occurred_at of a non-empty page, as French UTC dates. */
export function timeBounds(facts: EventFacts): { oldest: string; newest: string } {
  let oldest = Infinity;
  let newest = -Infinity;
  for (const ms of facts.occurredAtMs) {
    if (ms < oldest) oldest = ms;
    if (ms > newest) newest = ms;
  }
  return { oldest: dateFormat.format(oldest), newest: dateFormat.format(newest) };
}
