import type { OperationInput } from '../../generated/operations.ts';
import type { Principal } from '../auth/principal.ts';
import { ceilMs, compareInstants, parseInstant } from '../contract/date-time.ts';
import { forbidden, invalidArgument } from '../base/errors.ts';
import { matchingTypes } from '../contract/type-filter.ts';
import { PageTokenCodec } from '../feed/page-token.ts';
import { PAGE_MAX_BYTES } from '../limits/page-bytes.ts';
import type { OperationContext } from './context.ts';

/** A page of list_events whose events are still the stored bytes of their envelopes. */
export interface ListPage {
  /** The envelopes, newest first, joined by commas. */
  bytes: Buffer;
  count: number;
  /** Per event, in page order: what a summary of the page needs without parsing it. */
  facts: { types: string[]; occurredAtMs: number[] };
  next_page_token: string | null;
}

const OPEN = Buffer.from('{"events":[');

/** The response body, spliced from the stored bytes: no envelope is parsed, re-serialized or copied. */
export function listPageJson(page: ListPage): Buffer[] {
  return [OPEN, page.bytes, Buffer.from(`],"next_page_token":${JSON.stringify(page.next_page_token)}}`)];
}

/**
 * list_events: the workspace's events matching the filters, newest first (descending seq, the
 * reverse of event_feed's order), by keyset pages. Reads only.
 * - types: exact types, or prefixes `p.*` matching every type that starts with `p.`
 * - mailbox_ids: within the key's scope (forbidden otherwise); omitted, all the key may see
 * - occurred_after (inclusive) / occurred_before (exclusive), on the event's occurred_at
 * - page_token: issued by the previous page; bound to the workspace and to the filters (not limit)
 * A page stops at `limit` events, at PAGE_MAX_BYTES of envelopes (always one event at least), or
 * where a bounded scan stopped looking (the store's search plans, SCAN_MAX): next_page_token then
 * continues from there, even after a short or empty page; only null says nothing older matches.
 */
export async function listEvents(ctx: OperationContext<'read'>, input: OperationInput<'list_events'>): Promise<ListPage> {
  const { workspaceId } = ctx.principal;
  const { limit } = input;
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

  const page = await ctx.store.searchEvents({
    workspaceId,
    types,
    mailboxes,
    occurredFromMs,
    occurredBeforeMs,
    beforeSeq,
    limit,
    maxBytes: PAGE_MAX_BYTES,
  });
  return {
    bytes: page.bytes,
    count: page.count,
    facts: { types: page.types, occurredAtMs: page.occurredAtMs },
    next_page_token: page.continueBelow === null ? null : tokens.encode(workspaceId, page.continueBelow, filters),
  };
}

/** The mailboxes to read: those asked for (each within the key's scope), else the key's scope (null: all). */
function visibleMailboxes(principal: Principal, asked: readonly string[] | undefined): readonly string[] | null {
  if (asked === undefined) return principal.mailboxes;
  const scope = principal.mailboxes;
  if (scope !== null) {
    const outside = asked.find((mailbox) => !scope.includes(mailbox));
    if (outside !== undefined) {
      throw forbidden(
        `this key may not read events of mailbox "${outside}": mailbox_ids must be among the mailboxes the key is restricted to`,
      );
    }
  }
  return [...asked].sort();
}
