import type { IncomingMessage } from 'node:http';
import { streamRoutes } from '../contract/operations.ts';
import { Call } from '../calls/call.ts';
import { payRequest } from '../calls/anonymous.ts';
import type { CallServices } from '../calls/call-services.ts';
import { normalizedOrigin } from '../net/origins.ts';
import type { EdgeResponse, RequestLocals } from '../front-door/request-context.ts';
import { sendError } from '../front-door/send-error.ts';
import { ApiError, invalidArgument, unauthorized } from '../base/errors.ts';
import type { Logger } from '../base/log.ts';
import { streamEventFeed } from './event-stream.ts';
import { setRateLimitHeaders } from './rate-limit-headers.ts';

/** The one GET path of the contract that streams an operation to an EventSource (`x-stream-of: event_feed`), and that operation. */
const [STREAM_ROUTE, ...otherStreamRoutes] = streamRoutes;
if (!STREAM_ROUTE || otherStreamRoutes.length > 0)
  throw new Error('the contract must have one GET path with x-stream-of: this route serves one');
const STREAMED = STREAM_ROUTE.operation;

/** Where the contract serves event_feed to an EventSource. */
export const EVENT_STREAM_PATH = STREAM_ROUTE.path;

/** The query string's parameters, as the contract declares them: the token, and event_feed's own (after, limit). */
const PARAMETERS: ReadonlySet<string> = new Set(STREAM_ROUTE.queryParameters);
const PARAMETER_LIST = STREAM_ROUTE.queryParameters
  .map((name) => `"${name}"`)
  .join(', ')
  .replace(/, ([^,]*)$/, ' and $1');

/**
 * `GET /v1/event_feed/stream?token=…[&after=…][&limit=…]`: event_feed as Server-Sent Events for a
 * browser's EventSource, which sends no header and so cannot carry a key: a stream token
 * (stream_token, StreamTokens) stands for the key. The same call path as every other call
 * (Call.openWithStreamToken: the token's key checked again at each page and wake, revocation
 * ending the stream, every read paid and admitted), the same validation of `after` and `limit` as
 * event_feed's, and the same stream (streamEventFeed). The token travels in the URL: request lines are logged
 * without their query string (the front door's request log).
 *
 * Pages on other origins read it only when their origin is listed (CORS_ALLOWED_ORIGINS): then the
 * answer carries `Access-Control-Allow-Origin`, and a preflight (OPTIONS) is answered.
 */
export function createEventStreamRoute(services: CallServices, log: Logger, corsAllowedOrigins: readonly string[]) {
  const allowed = new Set(corsAllowedOrigins);
  return async (req: IncomingMessage, res: EdgeResponse, locals: RequestLocals): Promise<void> => {
    locals.operation = STREAMED.operationId;
    const origin = allowedOrigin(req, allowed);
    if (origin) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
    }
    if (req.method === 'OPTIONS') return preflight(res, origin);
    try {
      if (req.method !== 'GET') {
        res.setHeader('Allow', 'GET, OPTIONS');
        throw new ApiError(
          'invalid_argument',
          `${(req.method ?? '').slice(0, 20)} is not allowed here: the event stream is read with GET`,
          405,
        );
      }
      const query = queryOf(req.url ?? '');
      const token = query.get('token');
      if (token === undefined) throw unauthorized('a stream token is required (?token=…): mint one with stream_token');
      const call = await Call.openWithStreamToken(services, token, locals.clientAddress);
      locals.principal = call.principal;
      res.once('close', () => call.end());
      const rate = payRequest(call);
      if (rate) setRateLimitHeaders(res, rate);
      await streamEventFeed(services, call, () => feedRequestOf(query), req, res, locals.requestId, log);
    } catch (err) {
      sendError(res, locals.requestId, err, log);
    }
  };
}

/** The query string's parameters, each at most once, none but PARAMETERS (invalid_argument otherwise, as event_feed refuses unknown ones). */
function queryOf(url: string): Map<string, string> {
  const search = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  if (search.length > 2048) throw invalidArgument('the query string is too long');
  const query = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(search)) {
    if (!PARAMETERS.has(name))
      throw invalidArgument(`unknown parameter "${name.slice(0, 40)}": the event stream accepts only ${PARAMETER_LIST}`);
    if (query.has(name)) throw invalidArgument(`parameter "${name}" is given more than once`);
    query.set(name, value);
  }
  return query;
}

/** event_feed's request from the query string: `limit` as a number when it is written as an integer (else the validator says what it must be). */
function feedRequestOf(query: Map<string, string>): Record<string, unknown> {
  const request: Record<string, unknown> = {};
  const after = query.get('after');
  if (after !== undefined) request.after = after;
  const limit = query.get('limit');
  if (limit !== undefined) request.limit = /^-?\d{1,10}$/.test(limit) ? Number(limit) : limit;
  return request;
}

/** The request's Origin when it is listed; undefined for same-origin and non-browser requests (no CORS header needed) and unlisted ones. */
function allowedOrigin(req: IncomingMessage, allowed: ReadonlySet<string>): string | undefined {
  const header = req.headers.origin;
  if (header === undefined || allowed.size === 0) return undefined;
  const origin = normalizedOrigin(header);
  return origin !== undefined && allowed.has(origin) ? origin : undefined;
}

/** A CORS preflight: what an EventSource reconnecting with Last-Event-ID may send; nothing for an origin not listed. */
function preflight(res: EdgeResponse, origin: string | undefined): void {
  if (origin) {
    res.setHeader('Access-Control-Allow-Methods', 'GET');
    res.setHeader('Access-Control-Allow-Headers', 'Last-Event-ID');
    res.setHeader('Access-Control-Max-Age', '600');
  }
  res.statusCode = 204;
  res.end();
}
