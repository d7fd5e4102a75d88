import { createHmac } from 'node:crypto';
import { SignedPositions } from './signed-position.ts';

/**
 * event_feed cursors: the seq of the last event delivered, bound to the workspace and signed with
 * the server secret (layout in signed-position.ts). The empty domain keeps cursors byte-for-byte
 * what they were before page tokens shared the layout.
 */
export class CursorCodec {
  readonly #secret: Buffer;
  readonly #positions: SignedPositions;

  constructor(secret: string) {
    this.#secret = Buffer.from(secret, 'utf8');
    this.#positions = new SignedPositions(
      { invalid: 'after is not a valid cursor', returnedAs: 'next_cursor', restart: 'restart without "after"', domain: Buffer.alloc(0), extraLength: 0 },
      (bytes) => this.sign(bytes),
    );
  }

  encode(workspaceId: string, seq: number): string {
    return this.#positions.encode(workspaceId, seq);
  }

  /** The seq a cursor points after; throws invalid_argument saying why it cannot be used. */
  decode(workspaceId: string, cursor: string): number {
    return this.#positions.decode(workspaceId, cursor).seq;
  }

  /** HMAC-SHA256 with the server secret, for the other tokens the service signs (page-token.ts). */
  sign(bytes: Buffer): Buffer {
    return createHmac('sha256', this.#secret).update(bytes).digest();
  }
}
