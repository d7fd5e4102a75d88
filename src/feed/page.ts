import type { components } from '../../generated/types.ts';
import type { StoredPage } from '../store/port.ts';

type EventEnvelope = components['schemas']['EventEnvelope'];

/** A feed page whose events are still the stored JSON text of their envelopes. */
export interface FeedPage {
  events: StoredPage;
  next_cursor: string;
}

const OPEN = Buffer.from('{"events":[');

/** The answers already made of a page read (held polls woken by one commit share their read, SharedReads): made once, written to each. */
const answered = new WeakMap<StoredPage, { cursor: string; json: Buffer[] }>();

/**
 * The response body, spliced from the stored bytes: no envelope is parsed or re-serialized, and
 * the page is not even copied (the chunks are written one after the other). A page shared by
 * several calls (a read shared by the polls one commit woke) is answered with the same chunks.
 */
export function feedPageJson(page: FeedPage): Buffer[] {
  const made = answered.get(page.events);
  if (made?.cursor === page.next_cursor) return made.json;
  const json = [OPEN, page.events.bytes, Buffer.from(`],"next_cursor":${JSON.stringify(page.next_cursor)}}`)];
  if (page.events.count > 0) answered.set(page.events, { cursor: page.next_cursor, json });
  return json;
}

/** The page's envelopes, parsed (for the readers that need them one by one: tests, the stress harness). */
export function pageEnvelopes(page: StoredPage): EventEnvelope[] {
  return JSON.parse(`[${page.bytes.toString('utf8')}]`) as EventEnvelope[];
}

/**
 * The page's envelopes as slices of its bytes (no copy): the page is `envelope,envelope,…` of
 * JSON objects, so an envelope ends where its outermost brace closes, outside strings. (UTF-8
 * continuation bytes are all above 0x7f: no byte of a multi-byte character is mistaken for one.)
 */
export function envelopeSlices(bytes: Buffer): Buffer[] {
  const slices: Buffer[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth++;
    else if ((byte === CLOSE_BRACE || byte === CLOSE_BRACKET) && --depth === 0) {
      slices.push(bytes.subarray(start, i + 1));
      start = i + 2; // past the comma
    }
  }
  return slices;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
