import { createHmac, timingSafeEqual } from 'node:crypto';
import { invalidArgument } from '../errors.ts';

/*
 * A cursor is base64url( version | seq | workspace id | mac ):
 *   version  1 byte  (1)
 *   seq      8 bytes big-endian: the workspace sequence number of the last event delivered
 *   account  26 bytes: the workspace's ULID, binding the cursor to it
 *   mac      16 bytes: HMAC-SHA256 over the bytes before it, with the server secret, truncated
 * The encoding is deterministic, so one position always gives the same string, and decoding
 * accepts only that canonical string.
 */
const VERSION = 1;
const ACCOUNT_LENGTH = 26;
const MAC_LENGTH = 16;
const BODY_LENGTH = 1 + 8 + ACCOUNT_LENGTH;
const TOTAL_LENGTH = BODY_LENGTH + MAC_LENGTH;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const WORKSPACE_PREFIX = 'ws_';

export class CursorCodec {
  readonly #secret: Buffer;

  constructor(secret: string) {
    this.#secret = Buffer.from(secret, 'utf8');
  }

  encode(workspaceId: string, seq: number): string {
    const body = Buffer.alloc(BODY_LENGTH);
    body.writeUInt8(VERSION, 0);
    body.writeBigUInt64BE(BigInt(seq), 1);
    body.write(workspaceId.slice(WORKSPACE_PREFIX.length), 9, ACCOUNT_LENGTH, 'latin1');
    return Buffer.concat([body, this.#mac(body)]).toString('base64url');
  }

  /** The seq a cursor points after; throws invalid_argument saying why it cannot be used. */
  decode(workspaceId: string, cursor: string): number {
    const bytes = BASE64URL.test(cursor) ? Buffer.from(cursor, 'base64url') : undefined;
    if (!bytes || bytes.length !== TOTAL_LENGTH || bytes.toString('base64url') !== cursor) {
      throw invalidArgument('after is not a valid cursor: it is malformed or truncated; pass a next_cursor exactly as returned');
    }
    if (bytes.readUInt8(0) !== VERSION) {
      throw invalidArgument('after is not a valid cursor: its version is not supported; restart without "after"');
    }
    const body = bytes.subarray(0, BODY_LENGTH);
    if (!timingSafeEqual(this.#mac(body), bytes.subarray(BODY_LENGTH))) {
      throw invalidArgument('after is not a valid cursor: it was altered or was not issued by this service');
    }
    if (WORKSPACE_PREFIX + body.toString('latin1', 9, BODY_LENGTH) !== workspaceId) {
      throw invalidArgument('after is not a valid cursor for this workspace: it was issued to another workspace');
    }
    const seq = body.readBigUInt64BE(1);
    if (seq > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw invalidArgument('after is not a valid cursor: it was altered or was not issued by this service');
    }
    return Number(seq);
  }

  /**
   * Full HMAC-SHA256 of `bytes` with the server secret, for the other tokens the service issues
   * (list_events page tokens, src/feed/page-token.ts). Callers put their own domain label first in
   * `bytes`, so a MAC made for one kind of token can never authenticate another kind.
   */
  sign(bytes: Buffer): Buffer {
    return createHmac('sha256', this.#secret).update(bytes).digest();
  }

  #mac(body: Buffer): Buffer {
    return createHmac('sha256', this.#secret).update(body).digest().subarray(0, MAC_LENGTH);
  }
}
