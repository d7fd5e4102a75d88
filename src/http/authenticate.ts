import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../auth/principal.ts';
import { authenticateBearer } from '../edge/authenticate.ts';
import { bearerToken } from '../edge/bearer.ts';
import type { RequestLocals } from '../edge/request-context.ts';
import { rateLimitHeaders, type RateState } from '../limits/rate-limiter.ts';
import type { AppServices } from '../operations/context.ts';

/**
 * Resolves the bearer key before the body is even read: a caller without a valid key gets 401 and
 * learns nothing about what it sent. Then one token of the key's rate budget is taken (429
 * rate_limited when it is empty): the budget is taken before the body is read, so even refused
 * requests spend it (edge/authenticate.ts).
 */
export async function authenticateRequest(services: AppServices, req: IncomingMessage, res: ServerResponse, locals: RequestLocals): Promise<Principal> {
  const { principal, rate } = await authenticateBearer(services, bearerToken(req.headers.authorization), locals.clientAddress, (who) => (locals.principal = who));
  if (rate) setRateLimitHeaders(res, rate);
  return principal;
}

export function setRateLimitHeaders(res: ServerResponse, rate: RateState): void {
  for (const [name, value] of Object.entries(rateLimitHeaders(rate))) res.setHeader(name, value);
}
