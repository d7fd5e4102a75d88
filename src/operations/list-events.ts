import type { ListEventsRequest } from '../../generated/types.ts';
import type { Principal } from '../auth/principal.ts';
import { ceilMs, compareInstants, parseInstant } from '../contract/date-time.ts';
import { forbidden, invalidArgument } from '../errors.ts';
import { matchingTypes } from '../feed/type-filter.ts';
import { PageTokenCodec } from '../feed/page-token.ts';
import { searchEvents } from '../store/event-search.ts';
import { requirePermission, type OperationContext } from './context.ts';

export const DEFAULT_LIST_LIMIT = 100;

/** A page of list_events whose events are still the stored JSON text of their envelopes. */
export interface ListPage {
  events: string[];
  next_page_token: string | null;
}

/** The response body, spliced from stored text: no envelope is parsed or re-serialized. */
export function listPageJson(page: ListPage): string {
  return `{"events":[${page.events.join(',')}],"next_page_token":${JSON.stringify(page.next_page_token)}}`;
}

/**
 * list_events: the workspace's events matching the filters, newest first (descending seq, the
 * reverse of event_feed's order), by keyset pages. Reads only.
 * - types: exact types, or prefixes `p.*` matching every type that starts with `p.`
 * - mailbox_ids: within the key's scope (forbidden otherwise); omitted, all the key may see
 * - occurred_after (inclusive) / occurred_before (exclusive), on the event's occurred_at
 * - page_token: issued by the previous page; bound to the workspace and to the filters (not limit)
 */
export async function listEvents(ctx: OperationContext, input: ListEventsRequest): Promise<ListPage> {
  requirePermission(ctx.principal, 'read');
  const { workspaceId } = ctx.principal;
  const limit = input.limit ?? DEFAULT_LIST_LIMIT;
  const mailboxes = visibleMailboxes(ctx.principal, input.mailbox_ids);
  const types = input.types === undefined ? null : matchingTypes(input.types);
  const from = input.occurred_after === undefined ? null : parseInstant('occurred_after', input.occurred_after);
  const until = input.occurred_before === undefined ? null : parseInstant('occurred_before', input.occurred_before);
  if (from && until && compareInstants(from, until) > 0) {
    throw invalidArgument('occurred_after must not be later than occurred_before');
  }
  // Events carry whole milliseconds, so "≥ t" and "< t" both mean "≥ / < t rounded up to the millisecond".
  const occurredFromMs = from === null ? null : ceilMs(from);
  const occurredBeforeMs = until === null ? null : ceilMs(until);

  // What the token is bound to: the filters as they select, so equivalent spellings (an offset
  // instead of Z, another order of types) continue the same listing.
  const filters = JSON.stringify({
    types,
    mailbox_ids: input.mailbox_ids === undefined ? null : [...input.mailbox_ids].sort(),
    occurred_after: occurredFromMs,
    occurred_before: occurredBeforeMs,
  });
  const tokens = new PageTokenCodec(ctx.cursors);
  const beforeSeq = input.page_token === undefined ? null : tokens.decode(workspaceId, input.page_token, filters);

  // One more than asked: whether it exists says if there is an older page, without a second query.
  const rows = await searchEvents(ctx.db, { workspaceId, types, mailboxes, occurredFromMs, occurredBeforeMs, beforeSeq, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const next_page_token = rows.length > limit ? tokens.encode(workspaceId, Number(page.at(-1)!.seq), filters) : null;
  return { events: page.map((row) => row.envelope), next_page_token };
}

/** The mailboxes to read: those asked for (each within the key's scope), else the key's scope (null: all). */
function visibleMailboxes(principal: Principal, asked: readonly string[] | undefined): readonly string[] | null {
  if (asked === undefined) return principal.mailboxes;
  const scope = principal.mailboxes;
  if (scope !== null) {
    const outside = asked.find((mailbox) => !scope.includes(mailbox));
    if (outside !== undefined) {
      throw forbidden(`this key may not read events of mailbox "${outside}": mailbox_ids must be among the mailboxes the key is restricted to`);
    }
  }
  return [...asked].sort();
}
