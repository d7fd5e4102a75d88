import type { IncomingMessage } from 'node:http';
import { hasTrait } from '../../generated/operations.ts';
import { routeOf } from '../contract/operations.ts';
import { bearerToken } from '../front-door/bearer.ts';
import { payRequest } from '../calls/anonymous.ts';
import { answerOperation } from '../calls/answer-operation.ts';
import { Call } from '../calls/call.ts';
import type { CallServices } from '../calls/call-services.ts';
import type { EdgeResponse, RequestLocals } from '../front-door/request-context.ts';
import { sendError } from '../front-door/send-error.ts';
import { sendJson } from '../front-door/send-json.ts';
import { ApiError } from '../base/errors.ts';
import type { Logger } from '../base/log.ts';
import { preferredWaitSeconds } from './prefer-wait.ts';
import { setRateLimitHeaders } from './rate-limit-headers.ts';
import { streamEventFeed, wantsEventStream } from './event-stream.ts';
import { readJsonObjectBody, refuseQueryString } from './json-body.ts';

/**
 * The `/v1` edge, on plain Node request and response objects: it parses and renders, the call
 * does the rest (answerOperation). Open the call (its key authenticated before the body is read,
 * one token paid: Call.open, payRequest), route to the contract's operation, read the JSON body
 * when the pipeline asks for it, and write the answer with the rate headers it is given.
 *
 * Neither express nor an OpenAPI framework is on this path: on a tailing poll they cost several
 * times the operation. Routes and schemas still come from the contract alone (routeOf, RequestValidator).
 */
export function createApiRouter(services: CallServices, log: Logger) {
  return async (req: IncomingMessage, res: EdgeResponse, locals: RequestLocals): Promise<void> => {
    try {
      const method = req.method ?? 'GET';
      const path = (req.url ?? '').split('?', 1)[0]!;
      const { operation, allowed } = routeOf(method, path);
      // Named before authentication, for the log line and the metrics: a 401 still says what it was for.
      locals.operation = operation?.operationId;
      const call = await Call.open(services, bearerToken(req.headers.authorization), locals.clientAddress);
      locals.principal = call.principal;
      // Whichever way the call ends (answered, refused, its client gone), what it holds goes back.
      res.once('close', () => call.end());
      const rate = payRequest(call);
      if (rate) setRateLimitHeaders(res, rate);
      if (!operation) {
        if (allowed.length === 0) throw new ApiError('invalid_argument', `no operation at ${path.slice(0, 100)}; see /openapi.json`, 404);
        res.setHeader('Allow', allowed.join(', '));
        throw new ApiError(
          'invalid_argument',
          `${method.slice(0, 20)} is not allowed here: operations are called with ${allowed.join(' or ')}`,
          405,
        );
      }
      const operationId = operation.operationId;
      const body = () => {
        refuseQueryString(req);
        return readJsonObjectBody(req, res);
      };
      if (hasTrait(operationId, 'mayStream') && wantsEventStream(req)) {
        return await streamEventFeed(services, call, body, req, res, locals.requestId, log);
      }
      const waitSeconds = hasTrait(operationId, 'mayBeHeld') ? preferredWaitSeconds(req.headers.prefer) : undefined;
      if (waitSeconds !== undefined) {
        // RFC 7240: the client learns the wait it asked for is honoured.
        res.setHeader('Preference-Applied', `wait=${waitSeconds}`);
        res.setHeader('Vary', 'Prefer');
      }
      const answered = await answerOperation(services, call, operationId, body, {
        transport: 'http',
        socket: req.socket,
        ...(waitSeconds === undefined ? {} : { waitMs: waitSeconds * 1000 }),
      });
      if (answered.rate) setRateLimitHeaders(res, answered.rate);
      if (!answered.ok) throw answered.error;
      sendJson(res, answered.outcome.created ? 201 : 200, answered.outcome.json);
    } catch (err) {
      if (res.headersSent) return void sendError(res, locals.requestId, err, log);
      res.removeHeader('Preference-Applied');
      res.removeHeader('Vary');
      // Refused before its body was read (no key, no permission, rate limited, body too large):
      // close the connection after the answer instead of reading and discarding the rest.
      if (!req.complete) res.setHeader('Connection', 'close');
      sendError(res, locals.requestId, err, log);
    }
  };
}
