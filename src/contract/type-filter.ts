import { loadSpec } from './spec.ts';

// The event types of the contract (what EventEnvelope's discriminator maps): what `mail.*` expands to.
const EVENT_TYPES: readonly string[] = Object.keys(loadSpec().components.schemas.EventEnvelope.discriminator.mapping);

/**
 * The concrete types a list of filters (exact types, or prefixes ending in `.*`) selects, sorted;
 * null when they select every type.
 */
export function matchingTypes(filters: readonly string[]): string[] | null {
  const selected = new Set<string>();
  for (const filter of filters) {
    if (filter.endsWith('.*')) {
      const prefix = filter.slice(0, -1);
      for (const type of EVENT_TYPES) if (type.startsWith(prefix)) selected.add(type);
    } else {
      selected.add(filter);
    }
  }
  return EVENT_TYPES.every((type) => selected.has(type)) ? null : [...selected].sort();
}

/** Whether an event type passes a webhook's filters; [] lets every type through. */
export function matchesTypes(filters: readonly string[], type: string): boolean {
  return filters.length === 0 || (matchingTypes(filters)?.includes(type) ?? true);
}
