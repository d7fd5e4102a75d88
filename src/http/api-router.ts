import type { IncomingMessage } from 'node:http';
import type { OperationId } from '../../generated/operations.ts';
import { routeOf } from '../contract/operations.ts';
import { OperationCall } from '../edge/operation-call.ts';
import type { EdgeResponse, RequestLocals } from '../edge/request-context.ts';
import { sendError } from '../edge/send-error.ts';
import { jsonByteLength, sendJson } from '../edge/send-json.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { AppServices } from '../operations/context.ts';
import { preferredWaitSeconds } from '../edge/prefer-wait.ts';
import { runOperation, type CallOptions } from '../operations/registry.ts';
import { authenticateRequest, setRateLimitHeaders } from './authenticate.ts';
import { streamEventFeed, wantsEventStream } from './event-stream.ts';
import { withoutIdleTimeout } from './held-socket.ts';
import { readJsonObjectBody, refuseQueryString } from './json-body.ts';

/**
 * The `/v1` edge, on plain Node request and response objects: authenticate (before the body is
 * read), route to the contract's operation, check its permission, read the JSON body, validate it
 * against the contract (the validator MCP and the library use: same verdicts, same messages), run
 * the operation, and charge the key for the size of its answer (edge/operation-call.ts: the
 * headers then tell what is left after it).
 *
 * Neither express nor an OpenAPI framework is on this path: on a tailing poll they cost several
 * times the operation. Routes and schemas still come from the contract alone
 * (contract/operations.ts, contract/request-validator.ts).
 */
export function createApiRouter(services: AppServices, log: Logger) {
  return async (req: IncomingMessage, res: EdgeResponse, locals: RequestLocals): Promise<void> => {
    let call: OperationCall<OperationId> | undefined;
    try {
      const method = req.method ?? 'GET';
      const path = (req.url ?? '').split('?', 1)[0]!;
      const { operation, allowed } = routeOf(method, path);
      // Named before authentication, for the log line and the metrics: a 401 still says what it was for.
      locals.operation = operation?.operationId;
      const principal = await authenticateRequest(services, req, res, locals);
      if (!operation) {
        if (allowed.length === 0) throw new ApiError('invalid_argument', `no operation at ${path.slice(0, 100)}; see /openapi.json`, 404);
        res.setHeader('Allow', allowed.join(', '));
        throw new ApiError('invalid_argument', `${method.slice(0, 20)} is not allowed here: operations are called with ${allowed.join(' or ')}`, 405);
      }
      // Refused without a permission: the body is neither read nor validated.
      call = new OperationCall(services, principal, operation);
      refuseQueryString(req);
      if (isFeed(call) && wantsEventStream(req)) {
        const request = call.validate(await readJsonObjectBody(req, res));
        return await streamEventFeed(services, call, request, req, res, locals.requestId, log);
      }
      call.reservePage();
      const request = call.validate(await readJsonObjectBody(req, res));
      const held = call;
      res.once('close', () => held.release());
      await call.admitPage();
      const outcome = await runOperation(call.operationId, call.context, request, callOptions(call, req, res));
      const bytes = jsonByteLength(outcome.json);
      const rate = call.settle(bytes);
      if (rate) setRateLimitHeaders(res, rate);
      sendJson(res, outcome.created ? 201 : 200, outcome.json);
      if (call.answersAPage) services.metrics?.pageServed(call.operationId, 'http', bytes);
    } catch (err) {
      if (res.headersSent) return void sendError(res, locals.requestId, err, log);
      res.removeHeader('Preference-Applied');
      res.removeHeader('Vary');
      const rate = call?.refund();
      if (rate) setRateLimitHeaders(res, rate);
      // Refused before its body was read (no key, no permission, rate limited, body too large):
      // close the connection after the answer instead of reading and discarding the rest.
      if (!req.complete) res.setHeader('Connection', 'close');
      sendError(res, locals.requestId, err, log);
    }
  };
}

const isFeed = (call: OperationCall<OperationId>): call is OperationCall<'event_feed'> => call.operationId === 'event_feed';

/**
 * `Prefer: wait=N` on event_feed (RFC 7240): the read may be held up to N seconds while nothing
 * is new (operations/event-feed.ts), which `Preference-Applied` tells the client; meanwhile the
 * call holds neither tokens nor memory (OperationCall.whileHeld), and the idle timeout is off.
 */
function callOptions(call: OperationCall<OperationId>, req: IncomingMessage, res: EdgeResponse): CallOptions {
  if (!isFeed(call)) return {};
  const seconds = preferredWaitSeconds(req.headers.prefer);
  if (seconds === undefined) return {};
  res.setHeader('Preference-Applied', `wait=${seconds}`);
  res.setHeader('Vary', 'Prefer');
  const gone = new AbortController();
  res.once('close', () => gone.abort());
  return { wait: { ms: seconds * 1000, signal: gone.signal, whileHeld: (wait) => call.whileHeld(() => withoutIdleTimeout(req.socket, wait)) } };
}
