import type { RateLimiter } from '../limits/rate-limiter.ts';
import type { Call } from './call.ts';
import type { CallServices } from './call-services.ts';

/** What no key pays for (the contract, the reference page, the web view, unknown paths) is paid by the client's address: rate_limited when it has nothing left. */
export function payByAddress(rateLimiter: RateLimiter, address: string): void {
  rateLimiter.takeForAddress(address);
}

/**
 * A call identified and paid as a request (one token of its key's and workspace's buckets): the
 * rate state after it, for the answer's headers. A message that runs no operation is paid the
 * same way (payForMessage).
 */
export function payRequest(call: Call): ReturnType<Call['pay']> {
  return call.pay();
}
