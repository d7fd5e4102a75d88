import type { ListEventsRequest } from './api-types.ts';
import { state } from './state.ts';

/** list_events' body: the active filters, a page size, and where the previous page ended. */
export function listBody(limit: number, pageToken?: string | null): ListEventsRequest {
  const body: ListEventsRequest = { limit };
  if (state.filters.types.length) body.types = state.filters.types;
  if (state.filters.mailboxes.length) body.mailbox_ids = state.filters.mailboxes;
  if (pageToken) body.page_token = pageToken;
  return body;
}
