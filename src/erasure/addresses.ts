import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/**
 * What the service keeps of the addresses an erasure is asked for: a keyed hash for the log
 * (HMAC-SHA256 under a key derived from the service's secret, so the log proves which address was
 * erased to whoever has the address, and tells nobody else), and, while the erasure runs, the
 * addresses sealed (AES-256-GCM) so that a restarted instance can finish it.
 */
export class ErasureKeys {
  readonly #hashKey: Buffer;
  readonly #sealKey: Buffer;

  /** `secret`: the service's (CURSOR_SECRET, or the one stored in the database). */
  constructor(secret: string) {
    this.#hashKey = createHmac('sha256', secret).update('event-feed erasure address hash').digest();
    this.#sealKey = createHmac('sha256', secret).update('event-feed erasure address seal').digest();
  }

  /** The log's keyed hash of an address (normalised: normalAddress). */
  hash(address: string): string {
    return createHmac('sha256', this.#hashKey).update(normalAddress(address)).digest('hex');
  }

  seal(addresses: readonly string[]): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#sealKey, iv);
    const body = Buffer.concat([cipher.update(JSON.stringify(addresses), 'utf8'), cipher.final()]);
    return [iv, cipher.getAuthTag(), body].map((part) => part.toString('base64url')).join('.');
  }

  unseal(sealed: string): string[] {
    const [iv, tag, body] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
    const decipher = createDecipheriv('aes-256-gcm', this.#sealKey, iv!);
    decipher.setAuthTag(tag!);
    return JSON.parse(Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8')) as string[];
  }
}

/** How addresses are compared: trimmed, lower case (an address's case does not tell people apart in practice). */
export const normalAddress = (address: string): string => address.trim().toLowerCase();
