import type { IncomingMessage, ServerResponse } from 'node:http';
import { authenticate } from '../auth/api-keys.ts';
import type { Principal } from '../auth/principal.ts';
import { unauthorized } from '../errors.ts';
import { rateLimitHeaders } from '../limits/rate-limiter.ts';
import type { AppServices } from '../operations/context.ts';
import { bearerToken } from './bearer.ts';

/**
 * Resolves the bearer key before the body is even read: a caller without a valid key gets 401 and
 * learns nothing about what it sent. A database failure here is ours (500), not the caller's (401).
 * Then one token of the key's rate budget is taken (429 rate_limited when it is empty): the budget
 * is taken before the body is read, so even refused requests spend it.
 */
export async function authenticateRequest({ db, rateLimiter }: AppServices, req: IncomingMessage, res: ServerResponse): Promise<Principal> {
  const token = bearerToken(req.headers.authorization);
  if (!token) throw unauthorized();
  const principal = await authenticate(db, token);
  if (!principal) throw unauthorized();
  const rate = rateLimiter.take(principal.keyId);
  if (rate) for (const [name, value] of Object.entries(rateLimitHeaders(rate))) res.setHeader(name, value);
  return principal;
}
