import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../log.ts';
import { safeErrorFields } from '../log.ts';
import { ApiError, toErrorBody } from '../errors.ts';

export function sendError(res: Response, err: unknown, log: Logger): void {
  const requestId = String(res.locals.requestId);
  const { status, body, headers } = toErrorBody(err, requestId);
  if (!(err instanceof ApiError)) log.error({ ...safeErrorFields(err), request_id: requestId }, 'unhandled error');
  if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer realm="event-feed"');
  if (res.headersSent) return void res.end();
  res.set(headers);
  res.status(status).json(body);
}

/** Express's last stop: whatever a middleware threw becomes the contract's error body. */
export const errorHandler = (log: Logger) => (err: unknown, _req: Request, res: Response, _next: NextFunction) =>
  sendError(res, err, log);
