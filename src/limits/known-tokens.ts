import { createHash } from 'node:crypto';

const KEPT = 10_000;

/**
 * Bearer tokens that authenticated lately, as digests (never the token itself). A request with
 * one of them does not need its address's bucket to be looked up: a valid key sharing an address
 * with a flood of bad keys (a NAT, a proxy, the same host) keeps working, while any other token,
 * a known key id with a wrong secret included, is looked up only if its address can pay.
 * Bounded, least recently used first out; a token that later fails (revoked) is forgotten.
 */
export class KnownTokens {
  readonly #digests = new Set<string>();

  static digest(token: string): string {
    return createHash('sha256').update(token).digest('base64url');
  }

  has(digest: string): boolean {
    return this.#digests.has(digest);
  }

  remember(digest: string): void {
    this.#digests.delete(digest);
    if (this.#digests.size >= KEPT) this.#digests.delete(this.#digests.values().next().value!);
    this.#digests.add(digest);
  }

  forget(digest: string): void {
    this.#digests.delete(digest);
  }
}
