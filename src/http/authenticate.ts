import type { NextFunction, Request, Response } from 'express';
import { authenticate } from '../auth/api-keys.ts';
import { unauthorized } from '../errors.ts';
import { rateLimitHeaders } from '../limits/rate-limiter.ts';
import type { AppServices } from '../operations/context.ts';
import { bearerToken } from './bearer.ts';

/**
 * Resolves the bearer key before the body is even read: a caller without a valid key gets 401 and
 * learns nothing about what it sent. A database failure here is ours (500), not the caller's (401).
 * Then one token of the key's rate budget is taken (429 rate_limited when it is empty).
 */
export const authenticateBearer = ({ db, rateLimiter }: AppServices) => async (req: Request, res: Response, next: NextFunction) => {
  const token = bearerToken(req.headers.authorization);
  if (!token) return next(unauthorized());
  try {
    const principal = await authenticate(db, token);
    if (!principal) return next(unauthorized());
    res.locals.principal = principal;
    // The budget is taken before the body is read, so even refused requests spend it.
    const rate = rateLimiter.take(principal.keyId);
    if (rate) res.set(rateLimitHeaders(rate));
    next();
  } catch (err) {
    next(err);
  }
};
