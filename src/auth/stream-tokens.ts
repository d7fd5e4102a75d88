import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** What a stream token says once verified: whose key it stands for, and until when it opens streams. */
export interface StreamTokenClaims {
  keyId: string;
  expiresAtMs: number;
}

const PREFIX = 'efs_';
const VERSION = 1;
/** The key id's ULID part (26 Crockford base32 characters), as in `key_<ulid>`. */
const KEY_ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const NONCE_BYTES = 8;
const MAC_BYTES = 16;
/** version, expiry (seconds, uint32), key ULID, nonce, then the MAC of all of that. */
const LENGTH = 1 + 4 + 26 + NONCE_BYTES + MAC_BYTES;
/** What the MAC key is derived for (HKDF info): never a cursor's key, never another use. */
const MAC_KEY_INFO = 'event-feed stream tokens';

/**
 * Stream tokens (`efs_…`): what a browser's EventSource passes in the query string, since it sends
 * no header (GET /v1/event_feed/stream). A token names a key and an expiry, signed with a key
 * derived from the service's secret (shared by every instance, like cursors); it is not stored, and
 * it is not the key: it gives nothing but the right to open streams of that key's feed, with that
 * key's workspace and mailboxes, until it expires. Whoever checks it looks the key up (revoked:
 * refused), so revoking the key revokes its tokens everywhere at once.
 */
export class StreamTokens {
  readonly #macKey: Buffer;

  constructor(secret: string) {
    this.#macKey = Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), MAC_KEY_INFO, 32));
  }

  mint(keyId: string, expiresAtMs: number): string {
    const ulid = keyId.slice('key_'.length);
    if (!keyId.startsWith('key_') || !KEY_ULID.test(ulid)) throw new Error('a stream token is minted for a key id (key_<ulid>)');
    const body = Buffer.alloc(LENGTH - MAC_BYTES);
    body.writeUInt8(VERSION, 0);
    body.writeUInt32BE(Math.ceil(expiresAtMs / 1000), 1);
    body.write(ulid, 5, 'ascii');
    randomBytes(NONCE_BYTES).copy(body, 5 + 26);
    return PREFIX + Buffer.concat([body, this.#mac(body)]).toString('base64url');
  }

  /** The token's claims when it is one of ours, unaltered and not expired at `nowMs`; undefined otherwise (why is not told). */
  verify(token: string, nowMs: number): StreamTokenClaims | undefined {
    if (!isStreamToken(token)) return undefined;
    const bytes = Buffer.from(token.slice(PREFIX.length), 'base64url');
    if (bytes.length !== LENGTH || bytes.readUInt8(0) !== VERSION) return undefined;
    const body = bytes.subarray(0, LENGTH - MAC_BYTES);
    if (!timingSafeEqual(bytes.subarray(LENGTH - MAC_BYTES), this.#mac(body))) return undefined;
    const expiresAtMs = body.readUInt32BE(1) * 1000;
    if (expiresAtMs <= nowMs) return undefined;
    return { keyId: `key_${body.toString('ascii', 5, 5 + 26)}`, expiresAtMs };
  }

  #mac(body: Buffer): Buffer {
    return createHmac('sha256', this.#macKey).update(body).digest().subarray(0, MAC_BYTES);
  }
}

/** Whether a string has a stream token's shape (it may still be forged or expired). */
export const isStreamToken = (token: string): boolean =>
  token.startsWith(PREFIX) && token.length <= 200 && /^efs_[A-Za-z0-9_-]+$/.test(token);
