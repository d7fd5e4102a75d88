import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from 'node:crypto';
import { SignedPositions, type TokenKeys } from './signed-position.ts';

/**
 * event_feed cursors: the seq of the last event delivered, encrypted, bound to the workspace and
 * signed with the server secret (layout in SignedPositions). The empty domain keeps the MAC of
 * version-1 cursors what it was before page tokens shared the layout.
 */
const VERIFIED_CURSORS_KEPT = 10_000;
const ENCODED_CURSORS_KEPT = 10_000;

/** What the position cipher's key is derived for (HKDF info): never the MAC key, never another use. */
const POSITION_KEY_INFO = 'event-feed token position cipher';

export class CursorCodec implements TokenKeys {
  readonly #secret: Buffer;
  readonly #positionKey: Buffer;
  readonly #positions: SignedPositions;
  // Cursors already verified, for this workspace: a client tailing the feed sends the same one at
  // every poll until something new arrives, and checking its HMAC is a good part of such a poll.
  // Only cursors that passed every check are kept, a bounded number, oldest dropped first.
  readonly #verified = new Map<string, number>();
  // Cursors encoded lately, by workspace and seq: the polls woken by one commit, and the readers of
  // one workspace, are answered the same next_cursor; encoding it is a HMAC and an AES block each.
  readonly #encoded = new Map<string, string>();

  constructor(secret: string) {
    this.#secret = Buffer.from(secret, 'utf8');
    this.#positionKey = Buffer.from(hkdfSync('sha256', this.#secret, Buffer.alloc(0), POSITION_KEY_INFO, 32));
    this.#positions = new SignedPositions(
      {
        invalid: 'after is not a valid cursor',
        returnedAs: 'next_cursor',
        restart: 'restart without "after"',
        domain: Buffer.alloc(0),
        extraLength: 0,
      },
      this,
    );
  }

  encode(workspaceId: string, seq: number): string {
    const key = `${workspaceId} ${seq}`;
    let cursor = this.#encoded.get(key);
    if (cursor === undefined) {
      cursor = this.#positions.encode(workspaceId, seq);
      if (this.#encoded.size >= ENCODED_CURSORS_KEPT) this.#encoded.delete(this.#encoded.keys().next().value!);
      this.#encoded.set(key, cursor);
      // What this codec just made decodes to `seq`: a replaying client sends it back at its next
      // page, which then skips the HMAC and the AES block (a good part of a page's CPU).
      if (Number.isSafeInteger(seq) && seq >= 0) this.#remember(`${workspaceId} ${cursor}`, seq);
    }
    return cursor;
  }

  /** The seq a cursor points after; throws invalid_argument saying why it cannot be used. */
  decode(workspaceId: string, cursor: string): number {
    const key = `${workspaceId} ${cursor}`;
    let seq = this.#verified.get(key);
    if (seq === undefined) {
      seq = this.#positions.decode(workspaceId, cursor).seq;
      this.#remember(key, seq);
    }
    return seq;
  }

  #remember(key: string, seq: number): void {
    if (this.#verified.size >= VERIFIED_CURSORS_KEPT) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(key, seq);
  }

  /** HMAC-SHA256 with the server secret, for every token the service signs (PageTokenCodec too). */
  sign(bytes: Buffer): Buffer {
    return createHmac('sha256', this.#secret).update(bytes).digest();
  }

  /** One AES-256 block (ECB on a single block: a keyed permutation, deterministic by design). */
  encryptBlock(block: Buffer): Buffer {
    const cipher = createCipheriv('aes-256-ecb', this.#positionKey, null).setAutoPadding(false);
    return Buffer.concat([cipher.update(block), cipher.final()]);
  }

  decryptBlock(block: Buffer): Buffer {
    const decipher = createDecipheriv('aes-256-ecb', this.#positionKey, null).setAutoPadding(false);
    return Buffer.concat([decipher.update(block), decipher.final()]);
  }
}
