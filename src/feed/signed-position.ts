import { createHash, timingSafeEqual } from 'node:crypto';
import { invalidArgument } from '../base/errors.ts';

/*
 * The opaque tokens the service hands out (event_feed cursors, list_events page tokens) are one
 * layout, base64url( version | position | workspace | extra | mac ):
 *   version    1 byte: 2 (1 is still read, see below)
 *   position   16 bytes: one AES-256 block, encrypting seq (8 bytes big-endian: a position in the
 *              workspace's sequence) followed by the first 8 bytes of SHA-256(domain + workspace id)
 *   workspace  26 bytes: the workspace's ULID, binding the token to it
 *   extra      what else the token is bound to (0 bytes for cursors, a filter digest for page tokens)
 *   mac        16 bytes: HMAC-SHA256 of domain + the bytes before it, with the server secret
 * The cipher key is derived from the server secret with HKDF (TokenKeys), apart from the MAC key.
 *
 * Why the position is encrypted: a key restricted to some mailboxes sees the cursors it is given
 * advance by the events of every mailbox (1 → 2 → 6 → 10) and would learn the others' traffic.
 * Encrypting one block with a fixed key is deterministic (one position is always one string, as
 * the contract's "next_cursor is byte-identical to after" and instances sharing a database need)
 * and a pseudorandom permutation reveals only whether two positions are equal. The workspace and
 * domain in the block make the same seq look unrelated in another workspace or another kind.
 *
 * Version 1 carried the seq in clear (8 bytes instead of 16). Tokens of version 1 that clients
 * still hold keep working (their MAC is checked as before); only version 2 is issued.
 *
 * Encoding is deterministic and decoding accepts only the canonical string, so one position is
 * always one string. Each kind has its own domain and length, so one kind never passes for another.
 */
const VERSION = 2;
const LEGACY_VERSION = 1;
const POSITION_OFFSET = 1;
const POSITION_LENGTH = { [VERSION]: 16, [LEGACY_VERSION]: 8 } as const;
const WORKSPACE_LENGTH = 26;
const MAC_LENGTH = 16;
const TAG_LENGTH = 8;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const WORKSPACE_PREFIX = 'ws_';

/** What a token kind is signed and encrypted with: the server secret's keys (CursorCodec holds them). */
export interface TokenKeys {
  /** HMAC-SHA256 with the server secret. */
  sign(bytes: Buffer): Buffer;
  /** AES-256 of one 16-byte block with the position key, and back. */
  encryptBlock(block: Buffer): Buffer;
  decryptBlock(block: Buffer): Buffer;
}

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
    readonly keys: TokenKeys,
  ) {}

  encode(workspaceId: string, seq: number, extra: Buffer = Buffer.alloc(0)): string {
    const block = Buffer.alloc(16);
    block.writeBigUInt64BE(BigInt(seq), 0);
    this.#tag(workspaceId).copy(block, 8);
    const layout = this.#layout(VERSION);
    const body = Buffer.alloc(layout.bodyLength);
    body.writeUInt8(VERSION, 0);
    this.keys.encryptBlock(block).copy(body, POSITION_OFFSET);
    body.write(workspaceId.slice(WORKSPACE_PREFIX.length), layout.workspaceOffset, WORKSPACE_LENGTH, 'latin1');
    extra.copy(body, layout.extraOffset);
    return Buffer.concat([body, this.#mac(body)]).toString('base64url');
  }

  /** The position and bound extra of a token; throws invalid_argument saying why it cannot be used. */
  decode(workspaceId: string, token: string): { seq: number; extra: Buffer } {
    const { invalid, returnedAs, restart } = this.kind;
    const bytes = BASE64URL.test(token) ? Buffer.from(token, 'base64url') : undefined;
    const version = bytes?.[0];
    const layout = version === VERSION || version === LEGACY_VERSION ? this.#layout(version) : undefined;
    // A version this code does not know is told as such only when the token has today's length.
    const expectedLength = (layout ?? this.#layout(VERSION)).bodyLength + MAC_LENGTH;
    if (!bytes || bytes.length !== expectedLength || bytes.toString('base64url') !== token) {
      throw invalidArgument(`${invalid}: it is malformed or truncated; pass a ${returnedAs} exactly as returned`);
    }
    if (!layout) throw invalidArgument(`${invalid}: its version is not supported; ${restart}`);
    const body = bytes.subarray(0, layout.bodyLength);
    if (!timingSafeEqual(this.#mac(body), bytes.subarray(layout.bodyLength))) {
      throw invalidArgument(`${invalid}: it was altered or was not issued by this service`);
    }
    if (WORKSPACE_PREFIX + body.toString('latin1', layout.workspaceOffset, layout.extraOffset) !== workspaceId) {
      throw invalidArgument(`${invalid} for this workspace: it was issued to another workspace`);
    }
    const seq = version === VERSION ? this.#revealed(workspaceId, body) : body.readBigUInt64BE(POSITION_OFFSET);
    if (seq === undefined || seq > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw invalidArgument(`${invalid}: it was altered or was not issued by this service`);
    }
    return { seq: Number(seq), extra: body.subarray(layout.extraOffset) };
  }

  /** The seq of a version-2 body whose MAC holds, or undefined if its block does not belong to this workspace and kind. */
  #revealed(workspaceId: string, body: Buffer): bigint | undefined {
    const block = this.keys.decryptBlock(body.subarray(POSITION_OFFSET, POSITION_OFFSET + POSITION_LENGTH[VERSION]));
    if (!timingSafeEqual(block.subarray(8), this.#tag(workspaceId))) return undefined;
    return block.readBigUInt64BE(0);
  }

  #layout(version: typeof VERSION | typeof LEGACY_VERSION) {
    const workspaceOffset = POSITION_OFFSET + POSITION_LENGTH[version];
    const extraOffset = workspaceOffset + WORKSPACE_LENGTH;
    return { workspaceOffset, extraOffset, bodyLength: extraOffset + this.kind.extraLength };
  }

  #tag(workspaceId: string): Buffer {
    return createHash('sha256').update(this.kind.domain).update(workspaceId, 'latin1').digest().subarray(0, TAG_LENGTH);
  }

  #mac(body: Buffer): Buffer {
    return this.keys.sign(Buffer.concat([this.kind.domain, body])).subarray(0, MAC_LENGTH);
  }
}
