import type { ServerResponse } from 'node:http';
import { rateLimitHeaders, type RateState } from '../limits/rate-limiter.ts';

/** The IETF RateLimit-* fields of the key's bucket after a request. */
export function setRateLimitHeaders(res: ServerResponse, rate: RateState): void {
  for (const [name, value] of Object.entries(rateLimitHeaders(rate))) res.setHeader(name, value);
}
