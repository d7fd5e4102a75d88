import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ApiError, invalidArgument } from '../errors.ts';

export const MAX_BODY_BYTES = 64 * 1024;

const parseJson = express.json({ limit: MAX_BODY_BYTES, strict: false, type: () => true });

const hasBody = (req: Request) =>
  req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** Operations take their parameters in the JSON body only: a query string would otherwise be ignored in silence. */
export const noQueryParameters: RequestHandler = (req: Request, _res: Response, next: NextFunction) => {
  const names = Object.keys(req.query as object);
  // Another method is refused as such (405) by the router: that is the more useful answer.
  if (names.length === 0 || req.method !== 'POST') return next();
  next(invalidArgument(`unknown parameter "${names[0]!.slice(0, 60)}" in the query string: parameters go in the JSON body`));
};

/**
 * Operation bodies: JSON objects of at most 64 KiB. An empty body means "all defaults".
 * Every way a body can be wrong ends as invalid_argument with a message saying which way.
 */
export const jsonObjectBody: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
  if (!hasBody(req)) {
    req.body = {};
    return next();
  }
  if (!req.is(['application/json', 'application/*+json'])) {
    return next(invalidArgument(`Content-Type must be application/json (got "${(req.headers['content-type'] ?? 'none').slice(0, 60)}")`));
  }
  parseJson(req, res, (err?: unknown) => {
    if (err) return next(bodyError(err));
    if (req.body === undefined) req.body = {};
    if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body)) {
      return next(invalidArgument('request body must be a JSON object'));
    }
    next();
  });
};

function bodyError(err: unknown): ApiError {
  switch ((err as { type?: string }).type) {
    case 'entity.too.large':
      return new ApiError('invalid_argument', `request body is over ${MAX_BODY_BYTES / 1024} KiB`, 413);
    case 'entity.parse.failed':
      return invalidArgument('request body is not valid JSON');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return invalidArgument('request body must be UTF-8 JSON');
    case 'request.size.invalid':
      return invalidArgument('request body length does not match Content-Length');
    default:
      return invalidArgument('request body could not be read');
  }
}
