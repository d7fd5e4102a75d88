import { timingSafeEqual } from 'node:crypto';
import { invalidArgument } from '../errors.ts';

/*
 * The opaque tokens the service hands out (event_feed cursors, list_events page tokens) are one
 * layout, base64url( version | seq | workspace | extra | mac ):
 *   version    1 byte (1)
 *   seq        8 bytes big-endian: a position in the workspace's sequence
 *   workspace  26 bytes: the workspace's ULID, binding the token to it
 *   extra      what else the token is bound to (0 bytes for cursors, a filter digest for page tokens)
 *   mac        16 bytes: HMAC-SHA256 of domain + the bytes before it, with the server secret
 * Encoding is deterministic and decoding accepts only the canonical string, so one position is
 * always one string. Each kind has its own domain and length, so one kind never passes for another.
 */
const VERSION = 1;
const SEQ_OFFSET = 1;
const WORKSPACE_OFFSET = 9;
const WORKSPACE_LENGTH = 26;
const EXTRA_OFFSET = WORKSPACE_OFFSET + WORKSPACE_LENGTH;
const MAC_LENGTH = 16;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const WORKSPACE_PREFIX = 'ws_';

export interface TokenKind {
  /** Start of every refusal, e.g. `after is not a valid cursor`. */
  invalid: string;
  /** The response field that carries such tokens, e.g. `next_cursor`. */
  returnedAs: string;
  /** What to do about an unusable token, e.g. `restart without "after"`. */
  restart: string;
  domain: Buffer;
  extraLength: number;
}

export class SignedPositions {
  constructor(
    readonly kind: TokenKind,
    readonly hmac: (bytes: Buffer) => Buffer,
  ) {}

  encode(workspaceId: string, seq: number, extra: Buffer = Buffer.alloc(0)): string {
    const body = Buffer.alloc(EXTRA_OFFSET + this.kind.extraLength);
    body.writeUInt8(VERSION, 0);
    body.writeBigUInt64BE(BigInt(seq), SEQ_OFFSET);
    body.write(workspaceId.slice(WORKSPACE_PREFIX.length), WORKSPACE_OFFSET, WORKSPACE_LENGTH, 'latin1');
    extra.copy(body, EXTRA_OFFSET);
    return Buffer.concat([body, this.#mac(body)]).toString('base64url');
  }

  /** The position and bound extra of a token; throws invalid_argument saying why it cannot be used. */
  decode(workspaceId: string, token: string): { seq: number; extra: Buffer } {
    const { invalid, returnedAs, restart } = this.kind;
    const bodyLength = EXTRA_OFFSET + this.kind.extraLength;
    const bytes = BASE64URL.test(token) ? Buffer.from(token, 'base64url') : undefined;
    if (!bytes || bytes.length !== bodyLength + MAC_LENGTH || bytes.toString('base64url') !== token) {
      throw invalidArgument(`${invalid}: it is malformed or truncated; pass a ${returnedAs} exactly as returned`);
    }
    if (bytes.readUInt8(0) !== VERSION) throw invalidArgument(`${invalid}: its version is not supported; ${restart}`);
    const body = bytes.subarray(0, bodyLength);
    const seq = body.readBigUInt64BE(SEQ_OFFSET);
    if (!timingSafeEqual(this.#mac(body), bytes.subarray(bodyLength)) || seq > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw invalidArgument(`${invalid}: it was altered or was not issued by this service`);
    }
    if (WORKSPACE_PREFIX + body.toString('latin1', WORKSPACE_OFFSET, EXTRA_OFFSET) !== workspaceId) {
      throw invalidArgument(`${invalid} for this workspace: it was issued to another workspace`);
    }
    return { seq: Number(seq), extra: body.subarray(EXTRA_OFFSET) };
  }

  #mac(body: Buffer): Buffer {
    return this.hmac(Buffer.concat([this.kind.domain, body])).subarray(0, MAC_LENGTH);
  }
}
