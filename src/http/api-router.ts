import type { IncomingMessage } from 'node:http';
import { routeOf } from '../contract/operations.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Reservation } from '../limits/memory-budget.ts';
import { PAGE_RESERVATION_BYTES } from '../limits/page-bytes.ts';
import { requirePermission, type AppServices } from '../operations/context.ts';
import { operations } from '../operations/registry.ts';
import { authenticateRequest, setRateLimitHeaders } from './authenticate.ts';
import { readJsonObjectBody, refuseQueryString } from './json-body.ts';
import type { EdgeResponse, RequestLocals } from './request-context.ts';
import { sendError } from './send-error.ts';
import { jsonByteLength, sendJson } from './send-json.ts';

/** The operations whose answer may be a whole page (PAGE_MAX_BYTES): they reserve its cost first (RateLimiter.reservePage). */
const ANSWERS_A_PAGE = new Set(['event_feed', 'list_events']);

/**
 * The `/v1` edge, on plain Node request and response objects: authenticate (before the body is
 * read), route to the contract's operation, check its permission, read the JSON body, validate it
 * against the contract (the validator MCP and the library use: same verdicts, same messages), run
 * the operation, and charge the key for the size of its answer (RateLimiter.chargeForBytes: the
 * headers then tell what is left after it).
 *
 * Neither express nor openapi-backend is on this path: together they cost several times the
 * operation on a tailing poll, and openapi-backend 15 MB of memory (bench/README.md). Routes and
 * schemas still come from the contract alone (contract/operations.ts, contract/request-validator.ts).
 */
export function createApiRouter(services: AppServices, log: Logger) {
  const { rateLimiter } = services;
  return async (req: IncomingMessage, res: EdgeResponse, locals: RequestLocals): Promise<void> => {
    let reserved = 0;
    let held: Reservation | undefined;
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
      // A key without the operation's permission is refused whatever it sent: its body is neither
      // read nor validated (it would learn the schema). The operation checks again.
      requirePermission(principal, operation.permission);
      refuseQueryString(req);
      const answersAPage = ANSWERS_A_PAGE.has(operation.operationId);
      if (answersAPage) reserved = rateLimiter.reservePage(principal.keyId);
      const body = await readJsonObjectBody(req, res);
      const input = services.requestValidator.check(operation.operationId, body);
      // A page is held against the memory budget (limits/memory-budget.ts) until its answer is written.
      if (answersAPage) {
        const memory = await services.memory.admit(principal.workspaceId, PAGE_RESERVATION_BYTES);
        res.once('close', () => memory.release());
        held = memory;
      }
      const outcome = await operations[operation.operationId]!({ ...services, principal }, input);
      const bytes = jsonByteLength(outcome.json);
      held?.resize(bytes + 64 * 1024);
      const rate = rateLimiter.chargeForBytes(principal.keyId, bytes, reserved);
      reserved = 0;
      if (rate) setRateLimitHeaders(res, rate);
      sendJson(res, outcome.created ? 201 : 200, outcome.json);
    } catch (err) {
      if (reserved) {
        const rate = rateLimiter.charge(locals.principal!.keyId, -reserved);
        if (rate) setRateLimitHeaders(res, rate);
      }
      // Refused before its body was read (no key, no permission, rate limited, body too large):
      // close the connection after the answer instead of reading and discarding the rest.
      if (!req.complete) res.setHeader('Connection', 'close');
      sendError(res, locals.requestId, err, log);
    }
  };
}
