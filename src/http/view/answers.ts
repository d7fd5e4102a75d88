// The shapes the view checks an answer has before using it (the contract types what the service
// should send; a proxy or an older service may send something else: reported as malformed).
import type { EventFeedResponse, ListEventsResponse } from './api-types.ts';

export function isFeedPage(payload: unknown): payload is EventFeedResponse {
  const page = payload as Partial<EventFeedResponse> | null | undefined;
  return Array.isArray(page?.events) && typeof page.next_cursor === 'string';
}

export function isListPage(payload: unknown): payload is ListEventsResponse {
  const page = payload as Partial<ListEventsResponse> | null | undefined;
  return (
    Array.isArray(page?.events) &&
    (page.next_page_token === undefined || page.next_page_token === null || typeof page.next_page_token === 'string')
  );
}
