import type { IncomingMessage } from 'node:http';
import type { OperationId, OperationIdWith, Operations } from '../../generated/operations.ts';
import { routeOf } from '../contract/operations.ts';
import { bearerToken } from '../front-door/bearer.ts';
import { Call } from '../calls/call.ts';
import { OperationCall } from '../calls/answer-operation.ts';
import type { EdgeResponse, RequestLocals } from '../front-door/request-context.ts';
import { sendError } from '../front-door/send-error.ts';
import { jsonByteLength, sendJson } from '../front-door/send-json.ts';
import { ApiError } from '../base/errors.ts';
import type { Logger } from '../base/log.ts';
import type { AppServices } from '../app/services.ts';
import { preferredWaitSeconds } from './prefer-wait.ts';
import { runOperation, type CallOptions } from '../operations/registry.ts';
import { setRateLimitHeaders } from './rate-limit-headers.ts';
import { streamEventFeed, wantsEventStream } from './event-stream.ts';
import { withoutIdleTimeout } from './held-socket.ts';
import { readJsonObjectBody, refuseQueryString } from './json-body.ts';

/**
 * The `/v1` edge, on plain Node request and response objects: open the call (its key
 * authenticated before the body is read: Call.open), route to the contract's operation, check
 * its permission, read the JSON body, validate it against the contract (the validator MCP and the
 * library use: same verdicts, same messages), check the key again once the body is in, run the
 * operation, and charge the key for the size of its answer (OperationCall.settle: the headers
 * then tell what is left after it). What the call holds is released when the response closes.
 *
 * Neither express nor an OpenAPI framework is on this path: on a tailing poll they cost several
 * times the operation. Routes and schemas still come from the contract alone
 * (routeOf, RequestValidator).
 */
export function createApiRouter(services: AppServices, log: Logger) {
  return async (req: IncomingMessage, res: EdgeResponse, locals: RequestLocals): Promise<void> => {
    let op: OperationCall<OperationId> | undefined;
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
      const rate = call.pay();
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
      // Refused without a permission: the body is neither read nor validated.
      op = new OperationCall(services, call, operation);
      refuseQueryString(req);
      op.reservePage();
      const request = op.validate(await readJsonObjectBody(req, res));
      if (op.mayStream() && wantsEventStream(req)) {
        await op.ready();
        // Narrowed to the operation that streams, the request is that operation's.
        return await streamEventFeed(
          services,
          op,
          request as Operations[OperationIdWith<'mayStream'>]['request'],
          req,
          res,
          locals.requestId,
          log,
        );
      }
      // A read that may be held admits its page's memory once it has a page to read (callOptions).
      await op.ready({ admitLazily: op.mayBeHeld() });
      const outcome = await runOperation(op.operationId, op.context, request, callOptions(op, req, res));
      const bytes = jsonByteLength(outcome.json);
      const settled = op.settle(bytes);
      if (settled) setRateLimitHeaders(res, settled);
      sendJson(res, outcome.created ? 201 : 200, outcome.json);
      if (op.answersAPage) services.metrics?.pageServed(op.operationId, 'http', bytes);
    } catch (err) {
      if (res.headersSent) return void sendError(res, locals.requestId, err, log);
      res.removeHeader('Preference-Applied');
      res.removeHeader('Vary');
      const rate = op?.call.refund();
      if (rate) setRateLimitHeaders(res, rate);
      // Refused before its body was read (no key, no permission, rate limited, body too large):
      // close the connection after the answer instead of reading and discarding the rest.
      if (!req.complete) res.setHeader('Connection', 'close');
      sendError(res, locals.requestId, err, log);
    }
  };
}

/**
 * `Prefer: wait=N` (RFC 7240) on a read that may be held (the contract's `x-may-be-held`:
 * event_feed): the read may be held up to N seconds while nothing is new (eventFeed's FeedWait),
 * which `Preference-Applied` tells the client; meanwhile the call holds neither tokens nor memory,
 * each read after a wake is paid (OperationCall.hold), the wait ends when the client leaves or the
 * key is revoked (the call's signal), and the idle timeout is off.
 */
function callOptions(op: OperationCall<OperationId>, req: IncomingMessage, res: EdgeResponse): CallOptions {
  if (!op.mayBeHeld()) return {};
  const admit = op.admitWhenReading;
  const firstReadMemory = op.firstReadMemory;
  const seconds = preferredWaitSeconds(req.headers.prefer);
  // A plain read shares nothing: sharing costs a replay's pages more than it saves them. Followers
  // (held polls) asking again after one commit do share their first read.
  if (seconds === undefined) return { admit };
  res.setHeader('Preference-Applied', `wait=${seconds}`);
  res.setHeader('Vary', 'Prefer');
  return {
    admit,
    firstReadMemory,
    wait: {
      ms: seconds * 1000,
      signal: op.call.signal,
      hold: (wait, deadlineMs) => op.hold(() => withoutIdleTimeout(req.socket, wait), deadlineMs),
      sharedMemory: op.sharedReadMemory,
    },
  };
}
