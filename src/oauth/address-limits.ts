import { RateLimitedError } from '../base/errors.ts';
import { DEFAULT_MAX_BUCKETS, rateLimitHeaders } from '../limits/rate-limiter.ts';
import { TokenBuckets } from '../limits/token-buckets.ts';
import {
  ADDRESS_REGISTRATIONS_BURST,
  ADDRESS_REGISTRATIONS_PER_SECOND,
  ADDRESS_REQUESTS_BURST,
  ADDRESS_REQUESTS_PER_SECOND,
} from './limits.ts';

/**
 * What one client address may ask of the OAuth endpoints, none of which a key pays for: every
 * request takes a token of the address's bucket, a registration one more of a slower bucket.
 * The address is the service's (clientAddress with TRUST_PROXY_HOPS, addressKey: IPv6 by /64), not
 * express's `req.ip` that the SDK's own limiters count by (behind a proxy, every client would
 * share one budget); those are switched off (createOAuthEdge). Buckets live in bounded memory
 * (TokenBuckets). Off with the service's rate limits (RATE_LIMIT_PER_SECOND=0).
 */
export class OAuthAddressLimits {
  readonly #requests: TokenBuckets;
  readonly #registrations: TokenBuckets;

  constructor(
    readonly enabled: boolean,
    now: () => number = () => performance.timeOrigin + performance.now(),
  ) {
    this.#requests = new TokenBuckets(ADDRESS_REQUESTS_PER_SECOND, ADDRESS_REQUESTS_BURST, now, DEFAULT_MAX_BUCKETS);
    this.#registrations = new TokenBuckets(ADDRESS_REGISTRATIONS_PER_SECOND, ADDRESS_REGISTRATIONS_BURST, now, DEFAULT_MAX_BUCKETS);
  }

  /** Takes the request's tokens; the refusal (429, with Retry-After and RateLimit-*) when the address has none left. */
  take(address: string, registration: boolean): RateLimitedError | undefined {
    if (!this.enabled) return undefined;
    if (!this.#requests.spend(address, 1)) return refusal(this.#requests, address, 'too many OAuth requests from this address');
    if (registration && !this.#registrations.spend(address, 1))
      return refusal(this.#registrations, address, 'too many client registrations from this address');
    return undefined;
  }
}

function refusal(buckets: TokenBuckets, address: string, why: string): RateLimitedError {
  const retryAfter = buckets.retryAfterSeconds(address);
  return new RateLimitedError('address', `${why}; retry in ${retryAfter} s`, {
    'Retry-After': String(retryAfter),
    ...rateLimitHeaders(buckets.state(address)),
  });
}
