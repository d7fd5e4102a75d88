import { isFeedPage } from './answers.ts';
import type { EventEnvelope, RequestOf } from './api-types.ts';
import { request } from './api.ts';
import { FeedError, malformed } from './feed-error.ts';
import { TAIL_LIMIT, WALK_MAX_PAGES } from './limits.ts';

/**
 * For a deployment without feed_cursor (it answers 404): the head's cursor, by reading event_feed
 * pages of 500 from `after` without rendering them. Bounded: at most WALK_MAX_PAGES pages (100,000
 * events, a few seconds on this service; a rate limit stretches it); past that, no live tail.
 * Returns the last page read too, which holds what arrived while list_events was answering.
 */
export async function walkToHead(after: string | undefined): Promise<{ cursor: string; recent: EventEnvelope[] }> {
  let recent: EventEnvelope[] = [];
  for (let page = 0; page < WALK_MAX_PAGES; page++) {
    let payload: unknown;
    try {
      const body: RequestOf<'event_feed'> = after === undefined ? { limit: TAIL_LIMIT } : { after, limit: TAIL_LIMIT };
      ({ payload } = await request('event_feed', body));
    } catch (err) {
      // A cursor kept from before a pause may have expired: start again from the oldest event.
      if (err instanceof FeedError && err.kind === 'invalid_argument' && after !== undefined && page === 0) {
        after = undefined;
        continue;
      }
      throw err;
    }
    if (!isFeedPage(payload)) throw malformed();
    if (payload.events.length > 0) recent = payload.events;
    const end = payload.events.length === 0 || payload.next_cursor === after;
    after = payload.next_cursor;
    if (end) return { cursor: after, recent };
  }
  throw new FeedError('no_head');
}
