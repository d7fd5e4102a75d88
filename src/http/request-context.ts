import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../log.ts';
import { newRequestId } from '../ids.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Every response carries a request id (the client's when it sent a sane one) and is logged once. */
export function requestContext(log: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const given = req.headers['x-request-id'];
    const requestId = typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : newRequestId();
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      // Method, path and status only: never headers (keys) or bodies (cursors).
      log.info(
        { request_id: requestId, method: req.method, path: req.path, status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 },
        'request',
      );
    });
    next();
  };
}
