// The event types' French headings come from the contract's list of types
// (schemas/event-types.json), generated to generated/event-labels.js and served at /event-labels.js:
// the bundle imports it from there (not bundled), as the view always has.
import { EVENT_HEADINGS_FR } from '/event-labels.js';

/** Every event type of the contract, in its order. */
export const EVENT_TYPES: readonly string[] = Object.keys(EVENT_HEADINGS_FR);

/** An event type's French heading; an unknown type (a newer service) as it is. */
export function typeLabel(type: string): string {
  return Object.hasOwn(EVENT_HEADINGS_FR, type) ? EVENT_HEADINGS_FR[type as keyof typeof EVENT_HEADINGS_FR] : type;
}
