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
import { runOperation } from '../operations/registry.ts';
import { authenticateRequest, setRateLimitHeaders } from './authenticate.ts';
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
      const principal = (locals.principal = await authenticateRequest(services, req, res, locals.clientAddress));
      const method = req.method ?? 'GET';
      const path = (req.url ?? '').split('?', 1)[0]!;
      const { operation, allowed } = routeOf(method, path);
      if (!operation) {
        if (allowed.length === 0) throw new ApiError('invalid_argument', `no operation at ${path.slice(0, 100)}; see /openapi.json`, 404);
        res.setHeader('Allow', allowed.join(', '));
        throw new ApiError('invalid_argument', `${method.slice(0, 20)} is not allowed here: operations are called with ${allowed.join(' or ')}`, 405);
      }
      // Refused without a permission: the body is neither read nor validated.
      call = new OperationCall(services, principal, operation);
      refuseQueryString(req);
      call.reservePage();
      const request = call.validate(await readJsonObjectBody(req, res));
      const memory = await call.admitPage();
      if (memory) res.once('close', () => memory.release());
      const outcome = await runOperation(call.operationId, call.context, request);
      const rate = call.settle(jsonByteLength(outcome.json));
      if (rate) setRateLimitHeaders(res, rate);
      sendJson(res, outcome.created ? 201 : 200, outcome.json);
    } catch (err) {
      const rate = call?.refund();
      if (rate) setRateLimitHeaders(res, rate);
      // Refused before its body was read (no key, no permission, rate limited, body too large):
      // close the connection after the answer instead of reading and discarding the rest.
      if (!req.complete) res.setHeader('Connection', 'close');
      sendError(res, locals.requestId, err, log);
    }
  };
}
