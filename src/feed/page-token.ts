import { createHash, timingSafeEqual } from 'node:crypto';
import { invalidArgument } from '../errors.ts';

/** What signs page tokens: the cursor codec, keyed with the server secret shared by every instance. */
export interface TokenSigner {
  sign(bytes: Buffer): Buffer;
}

/*
 * A list_events page token is base64url( version | seq | workspace id | filters | mac ):
 *   version  1 byte  (1)
 *   seq      8 bytes big-endian: the workspace seq of the last (oldest) event returned; the next
 *            page holds the matching events with a smaller seq
 *   account  26 bytes: the workspace's ULID, binding the token to it
 *   filters  16 bytes: SHA-256 of the normalized filters (types, mailbox_ids, occurred_after,
 *            occurred_before; not limit, which may change from page to page), truncated, binding
 *            the token to them. Kept in clear so a token reused with other filters gets its own
 *            message; it reveals nothing the caller did not send.
 *   mac      16 bytes: HMAC-SHA256 over DOMAIN + the bytes before it, with the server secret
 *            (the cursors' secret), truncated. DOMAIN keeps a page token and an event_feed cursor
 *            from ever authenticating as each other (their lengths differ too: 67 and 51 bytes).
 * The encoding is deterministic and decoding accepts only the canonical string.
 */
const VERSION = 1;
const DOMAIN = Buffer.from('event-feed list_events page_token\0', 'latin1');
const ACCOUNT_LENGTH = 26;
const FILTERS_LENGTH = 16;
const MAC_LENGTH = 16;
const ACCOUNT_OFFSET = 1 + 8;
const FILTERS_OFFSET = ACCOUNT_OFFSET + ACCOUNT_LENGTH;
const BODY_LENGTH = FILTERS_OFFSET + FILTERS_LENGTH;
const TOTAL_LENGTH = BODY_LENGTH + MAC_LENGTH;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const WORKSPACE_PREFIX = 'ws_';

export class PageTokenCodec {
  readonly #signer: TokenSigner;

  constructor(signer: TokenSigner) {
    this.#signer = signer;
  }

  /** `filters` is the canonical text of the normalized filters (the caller's job, see list-events.ts). */
  encode(workspaceId: string, seq: number, filters: string): string {
    const body = Buffer.alloc(BODY_LENGTH);
    body.writeUInt8(VERSION, 0);
    body.writeBigUInt64BE(BigInt(seq), 1);
    body.write(workspaceId.slice(WORKSPACE_PREFIX.length), ACCOUNT_OFFSET, ACCOUNT_LENGTH, 'latin1');
    filterDigest(filters).copy(body, FILTERS_OFFSET);
    return Buffer.concat([body, this.#mac(body)]).toString('base64url');
  }

  /** The seq the next page goes below; throws invalid_argument saying why the token cannot be used. */
  decode(workspaceId: string, token: string, filters: string): number {
    const bytes = BASE64URL.test(token) ? Buffer.from(token, 'base64url') : undefined;
    if (!bytes || bytes.length !== TOTAL_LENGTH || bytes.toString('base64url') !== token) {
      throw invalidArgument('page_token is not valid: it is malformed or truncated; pass a next_page_token exactly as returned');
    }
    if (bytes.readUInt8(0) !== VERSION) {
      throw invalidArgument('page_token is not valid: its version is not supported; start again without "page_token"');
    }
    const body = bytes.subarray(0, BODY_LENGTH);
    if (!timingSafeEqual(this.#mac(body), bytes.subarray(BODY_LENGTH))) {
      throw invalidArgument('page_token is not valid: it was altered or was not issued by this service');
    }
    if (WORKSPACE_PREFIX + body.toString('latin1', ACCOUNT_OFFSET, FILTERS_OFFSET) !== workspaceId) {
      throw invalidArgument('page_token is not valid for this workspace: it was issued to another workspace');
    }
    if (!timingSafeEqual(filterDigest(filters), body.subarray(FILTERS_OFFSET, BODY_LENGTH))) {
      throw invalidArgument(
        'page_token was issued for other filters: pass the same types, mailbox_ids, occurred_after and occurred_before as the call that returned it, or start again without "page_token"',
      );
    }
    const seq = body.readBigUInt64BE(1);
    if (seq > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw invalidArgument('page_token is not valid: it was altered or was not issued by this service');
    }
    return Number(seq);
  }

  #mac(body: Buffer): Buffer {
    return this.#signer.sign(Buffer.concat([DOMAIN, body])).subarray(0, MAC_LENGTH);
  }
}

const filterDigest = (filters: string) => createHash('sha256').update(filters, 'utf8').digest().subarray(0, FILTERS_LENGTH);
