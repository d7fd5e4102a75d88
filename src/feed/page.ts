import type { components } from '../../generated/types.ts';
import type { StoredPage } from '../store/port.ts';

type EventEnvelope = components['schemas']['EventEnvelope'];

/** A feed page whose events are still the stored JSON text of their envelopes. */
export interface FeedPage {
  events: StoredPage;
  next_cursor: string;
}

const OPEN = Buffer.from('{"events":[');

/**
 * The response body, spliced from the stored bytes: no envelope is parsed or re-serialized, and
 * the page is not even copied (the chunks are written one after the other).
 */
export function feedPageJson(page: FeedPage): Buffer[] {
  return [OPEN, page.events.bytes, Buffer.from(`],"next_cursor":${JSON.stringify(page.next_cursor)}}`)];
}

/** The page's envelopes, parsed (for the readers that need them one by one: tests, the stress harness). */
export function pageEnvelopes(page: StoredPage): EventEnvelope[] {
  return JSON.parse(`[${page.bytes.toString('utf8')}]`) as EventEnvelope[];
}
