import { createHash, timingSafeEqual } from 'node:crypto';
import { invalidArgument } from '../base/errors.ts';
import { SignedPositions, type TokenKeys } from './signed-position.ts';

/** What signs and encrypts page tokens: the cursor codec, keyed with the server secret shared by every instance. */
export type TokenSigner = TokenKeys;

const FILTERS_LENGTH = 16;

/**
 * list_events page tokens: the seq of the last (oldest) event returned — the next page holds the
 * matching events below it — encrypted (as cursors are), bound to the workspace and to the filters (a truncated SHA-256 of
 * their normalized form, in clear so that a token reused with other filters gets its own message;
 * it reveals nothing the caller did not send). Layout and signing in SignedPositions; the
 * domain keeps a page token and a cursor from ever passing for each other.
 */
export class PageTokenCodec {
  readonly #positions: SignedPositions;

  constructor(signer: TokenSigner) {
    this.#positions = new SignedPositions(
      {
        invalid: 'page_token is not valid',
        returnedAs: 'next_page_token',
        restart: 'start again without "page_token"',
        domain: Buffer.from('event-feed list_events page_token\0', 'latin1'),
        extraLength: FILTERS_LENGTH,
      },
      signer,
    );
  }

  /** `filters` is the canonical text of the normalized filters (the caller's job, see listEvents). */
  encode(workspaceId: string, seq: number, filters: string): string {
    return this.#positions.encode(workspaceId, seq, filterDigest(filters));
  }

  /** The seq the next page goes below; throws invalid_argument saying why the token cannot be used. */
  decode(workspaceId: string, token: string, filters: string): number {
    const { seq, extra } = this.#positions.decode(workspaceId, token);
    if (!timingSafeEqual(filterDigest(filters), extra)) {
      throw invalidArgument(
        'page_token was issued for other filters: pass the same types, mailbox_ids, occurred_after and occurred_before as the call that returned it, or start again without "page_token"',
      );
    }
    return seq;
  }
}

const filterDigest = (filters: string) => createHash('sha256').update(filters, 'utf8').digest().subarray(0, FILTERS_LENGTH);
