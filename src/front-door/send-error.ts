import type { NextFunction, Request, Response } from 'express';
import type { ServerResponse } from 'node:http';
import type { Logger } from '../base/log.ts';
import { safeErrorFields } from '../base/log.ts';
import { ApiError, toErrorBody } from '../base/errors.ts';
import { noteError, noteRefusal } from './request-context.ts';
import { sendJson } from './send-json.ts';
import { answerFor } from './temporary-failure.ts';

/** The contract's error body for any thrown value; works on a plain response as on express's. */
export function sendError(res: ServerResponse, requestId: string, thrown: unknown, log: Logger): void {
  const err = answerFor(thrown);
  const { status, body, headers } = toErrorBody(err, requestId);
  noteError(res, err);
  if (!(err instanceof ApiError)) log.error({ ...safeErrorFields(err), request_id: requestId }, 'unhandled error');
  // A server-side failure told to the client in its own words (appendFailure): the database's error, for the operator.
  else if (status >= 500 && err.cause !== undefined)
    log.error({ ...safeErrorFields(err.cause), request_id: requestId }, err.message.slice(0, 120));
  if (res.headersSent) return void res.end();
  if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer realm="event-feed"');
  if (status === 429) noteRefusal(res);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  sendJson(res, status, JSON.stringify(body));
}

/** Express's last stop: whatever a middleware threw becomes the contract's error body. */
export const errorHandler = (log: Logger) => (err: unknown, _req: Request, res: Response, _next: NextFunction) =>
  sendError(res, String(res.locals.requestId), err, log);

/** Express's fallback: a path no route serves gets the contract's error body, not express's HTML page. */
export const nothingHere = (log: Logger) => (req: Request, res: Response) =>
  sendError(
    res,
    String(res.locals.requestId),
    new ApiError('invalid_argument', `nothing at ${req.method} ${req.path.slice(0, 100)}; the API is described at /openapi.json`, 404),
    log,
  );
