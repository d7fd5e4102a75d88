import type { NextFunction, Request, Response } from 'express';
import { authenticate } from '../auth/api-keys.ts';
import { unauthorized } from '../errors.ts';
import type { Db } from '../store/db.ts';
import { bearerToken } from './bearer.ts';

/**
 * Resolves the bearer key before the body is even read: a caller without a valid key gets 401 and
 * learns nothing about what it sent. A database failure here is ours (500), not the caller's (401).
 */
export const authenticateBearer = (db: Db) => async (req: Request, res: Response, next: NextFunction) => {
  const token = bearerToken(req.headers.authorization);
  if (!token) return next(unauthorized());
  try {
    const principal = await authenticate(db, token);
    if (!principal) return next(unauthorized());
    res.locals.principal = principal;
    next();
  } catch (err) {
    next(err);
  }
};
