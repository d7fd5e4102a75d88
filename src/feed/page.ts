import type { EventFeedResponse } from '../../generated/types.ts';

/** A feed page whose events are still the stored JSON text of their envelopes. */
export interface FeedPage {
  events: string[];
  next_cursor: string;
}

/** The response body, spliced from stored text: no envelope is parsed or re-serialized. */
export function feedPageJson(page: FeedPage): string {
  return `{"events":[${page.events.join(',')}],"next_cursor":${JSON.stringify(page.next_cursor)}}`;
}

export function feedPageObject(page: FeedPage): EventFeedResponse {
  return JSON.parse(feedPageJson(page)) as EventFeedResponse;
}
