import type { IncomingMessage } from 'node:http';
import { OpenAPIRouter, type Operation } from 'openapi-backend';
import { permissionByOperation } from '../contract/permissions.ts';
import { loadSpec } from '../contract/spec.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { requirePermission, type AppServices } from '../operations/context.ts';
import { operations } from '../operations/registry.ts';
import { authenticateRequest } from './authenticate.ts';
import { readJsonObjectBody, refuseQueryString } from './json-body.ts';
import type { EdgeResponse, RequestLocals } from './request-context.ts';
import { sendError } from './send-error.ts';
import { sendJson } from './send-json.ts';

/**
 * The `/v1` edge, on plain Node request and response objects: authenticate (before the body is
 * read), route to the contract's operation (openapi-backend's router), check the operation's
 * permission, read the JSON body, validate it against the contract (the validator MCP and the
 * library use: same verdicts, same messages), run the operation.
 *
 * Express is not on this path, nor openapi-backend's request handling: it re-parses every request
 * (headers, query, path templates) before validating, and together they cost several times the
 * operation on a tailing poll (bench/README.md). Routes are matched once per method and path.
 */
export function createApiRouter(services: AppServices, log: Logger) {
  const router = new OpenAPIRouter({ definition: loadSpec() as never });
  const matched = new Map<string, Operation>();
  const route = (method: string, path: string): Operation | undefined => {
    const key = `${method} ${path}`;
    let operation = matched.get(key);
    if (!operation) {
      operation = router.matchOperation({ method, path, headers: {} });
      // Only known routes are remembered: what clients make up stays out of memory.
      if (operation) matched.set(key, operation);
    }
    return operation;
  };

  return async (req: IncomingMessage, res: EdgeResponse, locals: RequestLocals): Promise<void> => {
    try {
      const principal = (locals.principal = await authenticateRequest(services, req, res));
      const method = req.method ?? 'GET';
      const path = (req.url ?? '').split('?', 1)[0]!;
      const operation = route(method, path);
      if (!operation?.operationId) {
        if (method !== 'POST' && route('POST', path)) {
          res.setHeader('Allow', 'POST');
          throw new ApiError('invalid_argument', `${method} is not allowed here: operations are called with POST`, 405);
        }
        throw new ApiError('invalid_argument', `no operation at ${path.slice(0, 100)}; see /openapi.json`, 404);
      }
      const operationId = operation.operationId;
      // A key without the operation's permission is refused whatever it sent: its body is neither
      // read nor validated (it would learn the schema). The operation checks again.
      requirePermission(principal, permissionByOperation.get(operationId)!);
      refuseQueryString(req);
      const body = await readJsonObjectBody(req, res);
      const input = services.requestValidator.check(operationId, body);
      const outcome = await operations[operationId]!({ ...services, principal }, input);
      sendJson(res, outcome.created ? 201 : 200, outcome.json);
    } catch (err) {
      sendError(res, locals.requestId, err, log);
    }
  };
}
