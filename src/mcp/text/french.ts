import { EVENT_LABELS_FR, type EventType } from '../../../generated/event-types.ts';
import type { EventFacts } from '../../store/port.ts';

/** An event type as a French sentence names it (schemas/event-types.json); the type itself if the contract does not know it. */
const inlineLabel = (type: string) => (Object.hasOwn(EVENT_LABELS_FR, type) ? EVENT_LABELS_FR[type as EventType].inline : type);

const dateFormat = new Intl.DateTimeFormat('fr-FR', { dateStyle: 'long', timeStyle: 'medium', timeZone: 'UTC' });

export const frenchCount = (n: number, one: string, many: string) => `${n.toLocaleString('fr-FR')} ${n > 1 ? many : one}`;

/** One line per type, most frequent first: `- mail.sent (message envoyé) : 3`. */
export function typeBreakdown(facts: EventFacts): string {
  const counts = new Map<string, number>();
  for (const type of facts.types) counts.set(type, (counts.get(type) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([type, n]) => `- ${type} (${inlineLabel(type)}) : ${n.toLocaleString('fr-FR')}`)
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
