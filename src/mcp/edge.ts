import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import express, { Router, type Express, type NextFunction, type Request, type Response } from 'express';
import type { IncomingMessage } from 'node:http';
import typeIs from 'type-is';
import type { Principal } from '../auth/principal.ts';
import { identifyBearer } from '../edge/authenticate.ts';
import { bearerToken } from '../edge/bearer.ts';
import { MAX_BODY_BYTES } from '../edge/body-bytes.ts';
import type { Edge } from '../edge/front-door.ts';
import { noteError, noteRefusal, type RequestLocals } from '../edge/request-context.ts';
import { errorHandler, nothingHere } from '../edge/send-error.ts';
import { ApiError, toErrorBody } from '../errors.ts';
import type { Logger } from '../log.ts';
import { safeErrorFields } from '../log.ts';
import { operationLabel } from '../metrics/metrics.ts';
import { challengeParams, mcpResource } from '../oauth/urls.ts';
import type { AppServices } from '../operations/context.ts';
import { errorResponse, INVALID_PARAMS, INVALID_REQUEST, messageProblem, toolCallParams, type JsonRpcMessage } from './json-rpc.ts';
import { answerWithSdk } from './sdk-session.ts';
import { callTool, isTool, toolResponse } from './tools.ts';

/** `/mcp` as express routes it: any case, with or without a trailing slash, whatever the query string. */
const isMcpPath = (url: string) => /^\/mcp\/?(?:\?|$)/i.test(url);

/** The MCP edge: `/mcp` (mounted by the server next to the HTTP edge, src/server.ts). */
export function createMcpEdge(services: AppServices, log: Logger): Edge {
  const app: Express = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(mcpRouter(services, log));
  app.use(nothingHere(log));
  app.use(errorHandler(log));
  return {
    takes: (req: IncomingMessage) => isMcpPath(req.url ?? ''),
    handle: (req, res, locals) => {
      locals.transport = 'mcp';
      void app(req, res);
    },
  };
}

/**
 * POST /mcp: MCP over Streamable HTTP, stateless, with JSON responses. The bearer key is checked
 * before any JSON-RPC is read; the body is one JSON-RPC message (batches are refused: MCP
 * 2025-06-18 removed them, and a batch multiplied one request's cost by its length), and every
 * message takes one token of the key's rate budget, whatever its method.
 *
 * tools/call is answered here: its result embeds the page's stored bytes as `structuredContent`,
 * as the HTTP answer does, instead of going through the SDK, which would need the page parsed into
 * objects and stringified again (the V8 heap then held several copies of every page in flight).
 * Every other message (initialize, tools/list, ping, notifications) goes to the SDK's server.
 */
function mcpRouter(services: AppServices, log: Logger): Router {
  const router = Router();

  /**
   * The bearer key or OAuth access token, before any JSON-RPC is read, as over HTTP
   * (http/authenticate.ts): a request whose key is missing, malformed or unknown is paid by its
   * address (429 past its budget, no lookup) and refused 401 with the API's error body
   * (`{"error": {"code": "unauthorized", …}}`, as on /v1) and the `WWW-Authenticate: Bearer
   * error="invalid_token"` challenge MCP clients read, with where to get a token (`resource_metadata`).
   * The key's own token is taken per message below.
   */
  const authenticated = async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    // OAuth access tokens are taken here, for this deployment's MCP resource (oauth/urls.ts), besides API keys.
    const origin = services.publicOrigin;
    try {
      (res.locals as { principal?: Principal }).principal = await identifyBearer(services, bearerToken(header), (res.locals as RequestLocals).clientAddress, origin && mcpResource(origin));
      return next();
    } catch (err) {
      noteError(res, err);
      if (err instanceof ApiError && err.code === 'unauthorized') {
        const description = header === undefined ? 'missing Authorization header' : bearerToken(header) === undefined ? 'malformed Authorization header' : err.message;
        // resource_metadata: where an assistant finds how to get a token (RFC 9728 §5.1).
        res.set('WWW-Authenticate', `Bearer error="invalid_token", error_description="${description}"${origin ? `, ${challengeParams(origin)}` : ''}`);
        return void res.status(401).json(toErrorBody(err, String(res.locals.requestId)).body);
      }
      if (err instanceof ApiError && err.code === 'rate_limited') {
        noteRefusal(res);
        for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
        return void res.status(429).json(errorResponse(null, -32000, `rate_limited: ${err.message}`));
      }
      log.error({ ...safeErrorFields(err), request_id: String(res.locals.requestId) }, 'MCP authentication failed');
      return void res.status(500).json(errorResponse(null, -32603, `internal error; quote request id ${String(res.locals.requestId)} to support`));
    }
  };

  const parseJsonRpc = express.json({ limit: MAX_BODY_BYTES, type: () => true, strict: false });
  const jsonRpcBody = (req: Request, res: Response, next: (err?: unknown) => void) =>
    parseJsonRpc(req, res, (err?: unknown) => {
      if (!err) return next();
      const tooLarge = (err as { type?: string }).type === 'entity.too.large';
      res.status(tooLarge ? 413 : 400).json(errorResponse(null, -32700, tooLarge ? `Parse error: body is over ${MAX_BODY_BYTES / 1024} KiB` : 'Parse error: body is not valid JSON'));
    });

  router.post('/mcp', authenticated, jsonRpcBody, async (req: Request, res: Response) => {
    const locals = res.locals as RequestLocals;
    const principal = locals.principal!;
    const requestId = String(res.locals.requestId);
    const body: unknown = req.body;
    const problem = messageProblem(body);
    if (problem) {
      // A refused message (a batch, say) is a request like any other: it pays its token.
      if (!takeToken(services, principal, res)) {
        noteRefusal(res);
        return void res.status(429).json(errorResponse(null, -32000, `rate_limited: ${res.locals.rateLimitMessage}`));
      }
      return void res.status(400).json(errorResponse(null, INVALID_REQUEST, problem));
    }
    const message = body as JsonRpcMessage;

    if (message.method === 'tools/call' && message.id !== undefined) {
      const refused = transportProblem(req);
      if (refused) return void res.status(refused.status).json(errorResponse(null, -32000, refused.message));
      const params = toolCallParams(message.params);
      if (!('problem' in params)) {
        // The tool as sent, for the log line; the operation only when it is one of ours (a bounded metrics label).
        locals.tool = params.name.slice(0, 60);
        if (isTool(params.name)) locals.operation = params.name;
      }
      if ('problem' in params) {
        takeToken(services, principal, res);
        return void res.status(200).json(errorResponse(message.id, INVALID_PARAMS, params.problem));
      }
      // callTool takes the message's token itself: over the budget, the model reads a rate_limited tool error.
      const answer = await callTool(services, principal, params.name, params.args, requestId, log);
      if ('reservation' in answer && answer.reservation) res.once('close', () => answer.reservation?.release());
      if ('thrown' in answer) noteError(res, answer.thrown);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const chunks = toolResponse(message.id, answer);
      for (const chunk of chunks) res.write(chunk);
      res.end();
      locals.bytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      if ('page' in answer && answer.answersAPage && locals.operation) services.metrics?.pageServed(operationLabel(locals.operation), 'mcp', locals.bytes);
      return;
    }

    if (!takeToken(services, principal, res)) {
      noteRefusal(res);
      return void res.status(429).json(errorResponse(message.id ?? null, -32000, `rate_limited: ${res.locals.rateLimitMessage}`));
    }
    await answerWithSdk(req, res, message);
  });

  router.all('/mcp', (_req, res) => {
    res.setHeader('Allow', 'POST');
    res.status(405).json(errorResponse(null, -32000, 'Method not allowed: MCP is served statelessly over POST /mcp'));
  });
  return router;
}

/** One token of the key's budget for a message; false (with Retry-After and RateLimit-* set) when it is empty. */
function takeToken(services: AppServices, principal: Principal, res: Response): boolean {
  try {
    services.rateLimiter.take(principal.keyId);
    return true;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    noteError(res, err);
    for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
    res.locals.rateLimitMessage = err.message;
    return false;
  }
}

/** What the SDK's transport checks of a request before reading its message, answered the same way here. */
function transportProblem(req: Request): { status: number; message: string } | undefined {
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return { status: 406, message: 'Not Acceptable: Client must accept both application/json and text/event-stream' };
  }
  if (!typeIs(req, ['application/json'])) return { status: 415, message: 'Unsupported Media Type: Content-Type must be application/json' };
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    return { status: 400, message: `Bad Request: Unsupported protocol version: ${version.slice(0, 40)} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})` };
  }
  return undefined;
}
