import type { ListEventsRequest } from '../../generated/types.ts';
import type { Principal } from '../auth/principal.ts';
import { forbidden, invalidArgument } from '../errors.ts';
import { matchingTypes } from '../feed/type-filter.ts';
import { PageTokenCodec } from '../feed/page-token.ts';
import { PAGE_MAX_BYTES } from '../limits/page-bytes.ts';
import { searchEvents } from '../store/event-search.ts';
import { requirePermission, type OperationContext } from './context.ts';

export const DEFAULT_LIST_LIMIT = 100;

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
 * where a bounded scan stopped looking (store/event-search-plans.ts): next_page_token then
 * continues from there, even after a short or empty page; only null says nothing older matches.
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

  const page = await searchEvents(ctx.db, { workspaceId, types, mailboxes, occurredFromMs, occurredBeforeMs, beforeSeq, limit, maxBytes: PAGE_MAX_BYTES });
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
      throw forbidden(`this key may not read events of mailbox "${outside}": mailbox_ids must be among the mailboxes the key is restricted to`);
    }
  }
  return [...asked].sort();
}

/** An instant: whole epoch milliseconds, plus the digits of the fraction beyond them (no trailing zeros). */
interface Instant {
  ms: number;
  beyondMs: string;
}

// Exactly what the contract's `date-time` format (ajv-formats, full mode) accepts: `T`, `t` or one
// whitespace character between date and time; any number of fraction digits; `Z`, `z`, `±hh`,
// `±hhmm` or `±hh:mm`. Parsed by hand, not by `Date.parse`, whose handling of anything but the
// ISO form is the engine's guess (`+01` gives NaN, `2026-02-30 …` rolls over to March).
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt\s](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)$/;

/** A validated RFC 3339 date-time as an instant; invalid_argument (never a 500) for what no event time can be. */
function parseInstant(field: string, text: string): Instant {
  const m = DATE_TIME.exec(text);
  const notValid = () => invalidArgument(`${field} must be a valid date-time`);
  if (!m) throw notValid();
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const fraction = m[7] ?? '';
  const offsetMinutes = m[8] === undefined ? 0 : (m[8] === '-' ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10] ?? 0));
  if (second === 60) {
    throw invalidArgument(`${field} ${JSON.stringify(text)} is not a representable UTC date-time: it is a leap second, which no event time can be`);
  }
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, Number(fraction.slice(0, 3).padEnd(3, '0')));
  const rolledOver = date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day;
  if (rolledOver || hour > 23 || minute > 59 || Number(m[9] ?? 0) > 23 || Number(m[10] ?? 0) > 59) throw notValid();
  const ms = date.getTime() - offsetMinutes * 60_000;
  if (!Number.isSafeInteger(ms)) {
    throw invalidArgument(`${field} ${JSON.stringify(text)} is not a representable UTC date-time`);
  }
  return { ms, beyondMs: fraction.slice(3).replace(/0+$/, '') };
}

const ceilMs = (instant: Instant) => instant.ms + (instant.beyondMs === '' ? 0 : 1);

function compareInstants(a: Instant, b: Instant): number {
  if (a.ms !== b.ms) return a.ms - b.ms;
  const width = Math.max(a.beyondMs.length, b.beyondMs.length);
  const x = a.beyondMs.padEnd(width, '0');
  const y = b.beyondMs.padEnd(width, '0');
  return x < y ? -1 : x > y ? 1 : 0;
}
