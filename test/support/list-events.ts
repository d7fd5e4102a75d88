/**
 * What the list_events suites share: events of a chosen size and type, and reading a page token's
 * position back (to count what a call examined).
 */
import { CursorCodec } from '../../src/feed/cursor.ts';
import { PageTokenCodec } from '../../src/feed/page-token.ts';
import { matchingTypes } from '../../src/contract/type-filter.ts';
import type { Store } from '../../src/store/port.ts';
import { sampleEvent } from './contract.ts';

/**
 * A valid `mail.received` of ~63 KB: 175 recipients with long addresses and names and a
 * 998-character subject line (the reproduction of issue 18). `huge`: 2 × 1000 recipients with
 * the longest addresses and names the contract allows, ~1.1 MB, more than a page's byte cap.
 */
export function largeEvent(mailboxId: string, n: number, huge = false) {
  const base = sampleEvent(mailboxId, n);
  const address = (i: number) =>
    huge
      ? {
          email: `${'r'.repeat(60)}${String(i).padStart(4, '0')}@${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(63)}.fr`,
          name: `${'N'.repeat(250)}${String(i).padStart(6, '0')}`,
        }
      : {
          email: `${'r'.repeat(56)}${String(i).padStart(4, '0')}@${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.fr`,
          name: `${'Destinataire '.repeat(7)}${i}`,
        };
  const to = Array.from({ length: huge ? 1000 : 175 }, (_, i) => address(i));
  const cc = huge ? Array.from({ length: 1000 }, (_, i) => address(1000 + i)) : undefined;
  return { ...base, data: { ...base.data, to, ...(cc ? { cc } : {}), subject_line: `${n} ${'x'.repeat(990)}`.slice(0, 998) } };
}

/** A valid `mail.bounced` of one mailbox. */
export function bouncedEvent(mailboxId: string, n: number) {
  return {
    type: 'mail.bounced' as const,
    subject: { person: { email: `p${n}@laposte.net` }, refs: { mailbox_id: mailboxId } },
    data: {
      internet_message_id: `<b${n}@mail.boutique.fr>`,
      recipient: `p${n}@laposte.net`,
      bounce_type: 'hard',
      bounce_category: 'unknown_user',
      smtp_code: 550,
      enhanced_status: '5.1.1',
      diagnostic: '550 5.1.1 user unknown',
      remote_mta: 'smtpz4.laposte.net',
    },
  };
}

export interface ListFilters {
  types?: string[];
  mailbox_ids?: string[];
  occurred_after?: string;
  occurred_before?: string;
}

/**
 * The seq a page token says the next page starts below: where the call that issued it stopped
 * looking. Bound to the filters as list-events.ts binds them (normalized types, sorted mailboxes,
 * times in whole milliseconds rounded up).
 */
export async function tokenPosition(store: Store, workspaceId: string, token: string, filters: ListFilters): Promise<number> {
  const tokens = new PageTokenCodec(new CursorCodec(await store.sharedCursorSecret()));
  const ms = (time: string | undefined) => (time === undefined ? null : Math.ceil(Date.parse(time)));
  const text = JSON.stringify({
    types: filters.types === undefined ? null : matchingTypes(filters.types),
    mailbox_ids: filters.mailbox_ids === undefined ? null : [...filters.mailbox_ids].sort(),
    occurred_after: ms(filters.occurred_after),
    occurred_before: ms(filters.occurred_before),
  });
  return tokens.decode(workspaceId, token, text);
}

/** The `events` array of a list_events response body, as the bytes it was sent as. */
export function eventsBytes(body: string): number {
  const start = '{"events":['.length;
  const end = body.lastIndexOf('],"next_page_token":');
  return Buffer.byteLength(body.slice(start, end));
}
