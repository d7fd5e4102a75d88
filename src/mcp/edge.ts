import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import express, { Router, type Express, type NextFunction, type Request, type Response } from 'express';
import type { IncomingMessage } from 'node:http';
import typeIs from 'type-is';
import { bearerToken } from '../front-door/bearer.ts';
import { payForMessage } from '../calls/answer-operation.ts';
import { Call } from '../calls/call.ts';
import type { CallServices } from '../calls/call-services.ts';
import { MAX_BODY_BYTES } from '../front-door/body-bytes.ts';
import type { Edge } from '../front-door/front-door.ts';
import { noteError, noteRefusal, type RequestLocals } from '../front-door/request-context.ts';
import { errorHandler, nothingHere } from '../front-door/send-error.ts';
import { ApiError, toErrorBody } from '../base/errors.ts';
import type { Logger } from '../base/log.ts';
import { safeErrorFields } from '../base/log.ts';
import { challengeParams, mcpResource } from '../oauth/urls.ts';
import { handshakeParamsProblem } from './handshake-params.ts';
import {
  errorResponse,
  INVALID_PARAMS,
  INVALID_REQUEST,
  messageProblem,
  toolCallParams,
  type JsonRpcId,
  type JsonRpcMessage,
} from './json-rpc.ts';
import { OriginPolicy } from './origin.ts';
import { speaksStateless } from './protocol-era.ts';
import { answerWithSdk } from './sdk-session.ts';
import { STATELESS_RESULT, statelessStep } from './stateless.ts';
import { callTool, isTool, toolResponse, type ResultFields } from './tools.ts';

/** What the MCP edge needs: the calls' services, and the origin its OAuth resource derives from once the server listens. */
export type McpServices = CallServices & { readonly publicOrigin?: string };

export interface McpEdgeSettings {
  /** Browser origins allowed besides the deployment's own (MCP_ALLOWED_ORIGINS: OriginPolicy). */
  allowedOrigins: readonly string[];
}

/** `/mcp` as express routes it: any case, with or without a trailing slash, whatever the query string. */
const isMcpPath = (url: string) => /^\/mcp\/?(?:\?|$)/i.test(url);

/** The MCP edge: `/mcp` (mounted by the server next to the HTTP edge, startServer). */
export function createMcpEdge(services: McpServices, log: Logger, settings: McpEdgeSettings): Edge {
  const app: Express = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(mcpRouter(services, log, new OriginPolicy(settings.allowedOrigins, () => services.publicOrigin)));
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
 * POST /mcp: MCP over Streamable HTTP, stateless, with JSON responses, in both protocol
 * generations (speaksStateless, HANDSHAKE_VERSIONS, STATELESS_VERSIONS): the handshake revisions (2025-06-18, 2025-11-25: `initialize`
 * first) and 2026-07-28 (each request names its version in `_meta`). A browser's request from an
 * origin not allowed is refused 403 before anything else (OriginPolicy); then the bearer key is
 * checked before any JSON-RPC is read; the body is one JSON-RPC message (batches are refused: MCP
 * 2025-06-18 removed them, and a batch multiplied one request's cost by its length), and every
 * message takes one token of the key's rate budget, whatever its method and generation.
 *
 * tools/call is answered here in both generations: its result embeds the page's stored bytes as
 * `structuredContent`, as the HTTP answer does, instead of going through the SDK, which would need
 * the page parsed into objects and stringified again (the V8 heap then held several copies of
 * every page in flight). 2026-07-28's other messages are answered by statelessStep; the handshake
 * generation's (initialize, tools/list, ping, notifications) by the SDK's server.
 */
function mcpRouter(services: McpServices, log: Logger, origins: OriginPolicy): Router {
  const router = Router();

  /** Before authentication and before the body: a foreign page must learn nothing, and cost nothing to refuse. */
  router.all('/mcp', (req: Request, res: Response, next: NextFunction) => {
    if (origins.allows(req)) return next();
    res
      .status(403)
      .json(
        errorResponse(
          undefined,
          -32000,
          'Forbidden: this Origin may not call /mcp (a deployment lists the browser origins it serves in MCP_ALLOWED_ORIGINS)',
        ),
      );
  });

  const authenticated = authenticate(services, log);

  const jsonRpcBody = parsedJsonRpc();

  /** Answers a message that takes no tool: one token of the key's budget first (429 without it), then `answer`. */
  const paidAnswer = (res: Response, call: Call, id: JsonRpcId | undefined, answer: () => unknown) => {
    const refused = payForMessage(call);
    if (!refused) return answer();
    if (!(refused.error instanceof ApiError)) throw refused.error;
    noteError(res, refused.error);
    noteRefusal(res);
    for (const [name, value] of Object.entries(refused.error.headers)) res.setHeader(name, value);
    return void res.status(429).json(errorResponse(id, -32000, `rate_limited: ${refused.error.message}`));
  };

  /** A tools/call of either generation: callTool takes the message's token itself (over the budget, the model reads a rate_limited tool error). */
  const answerToolCall = async (res: Response, call: Call, id: JsonRpcId, name: string, args: unknown, fields?: ResultFields) => {
    const locals = res.locals as RequestLocals;
    const answer = await callTool(services, call, name, args, String(res.locals.requestId), log);
    if ('thrown' in answer) noteError(res, answer.thrown);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    const chunks = toolResponse(id, answer, fields);
    for (const chunk of chunks) res.write(chunk);
    res.end();
    locals.bytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  };

  /** Notes the tool called, for the log line; the operation only when it is one of ours (a bounded metrics label). */
  const noteTool = (res: Response, name: string) => {
    const locals = res.locals as RequestLocals;
    locals.tool = name.slice(0, 60);
    if (isTool(name)) locals.operation = name;
  };

  router.post('/mcp', authenticated, jsonRpcBody, async (req: Request, res: Response) => {
    const call = res.locals.call as Call;
    const body: unknown = req.body;
    const problem = messageProblem(body);
    // A refused message (a batch, say) is a request like any other: it pays its token.
    if (problem) return paidAnswer(res, call, undefined, () => res.status(400).json(errorResponse(undefined, INVALID_REQUEST, problem)));
    const message = body as JsonRpcMessage;

    if (speaksStateless(req, message)) {
      const refused = transportProblem(req);
      if (refused)
        return paidAnswer(res, call, message.id, () => res.status(refused.status).json(errorResponse(message.id, -32000, refused.message)));
      const step = statelessStep(req, message);
      if (step.kind === 'tool') {
        noteTool(res, step.name);
        return answerToolCall(res, call, step.id, step.name, step.args, STATELESS_RESULT);
      }
      if (message.method === 'tools/call' && typeof (message.params as { name?: unknown } | undefined)?.name === 'string')
        noteTool(res, (message.params as { name: string }).name);
      return paidAnswer(res, call, message.id, () =>
        step.kind === 'accepted' ? res.status(202).end() : res.status(step.status).json(step.body),
      );
    }

    if (message.method === 'tools/call' && message.id !== undefined) {
      // Refused or not, a message pays its token, as in the stateless generation.
      const refused = transportProblem(req) ?? handshakeVersionProblem(req);
      if (refused)
        return paidAnswer(res, call, undefined, () => res.status(refused.status).json(errorResponse(null, -32000, refused.message)));
      const params = toolCallParams(message.params);
      if ('problem' in params)
        return paidAnswer(res, call, message.id, () => res.status(200).json(errorResponse(message.id, INVALID_PARAMS, params.problem)));
      noteTool(res, params.name);
      return answerToolCall(res, call, message.id, params.name, params.args);
    }

    const invalid = handshakeParamsProblem(message);
    return paidAnswer(res, call, message.id, () =>
      invalid ? res.status(200).json(errorResponse(message.id, INVALID_PARAMS, invalid)) : answerWithSdk(req, res, message),
    );
  });

  router.all('/mcp', (_req, res) => {
    res.setHeader('Allow', 'POST');
    res.status(405).json(errorResponse(null, -32000, 'Method not allowed: MCP is served statelessly over POST /mcp'));
  });
  return router;
}

/**
 * The bearer key or OAuth access token, before any JSON-RPC is read, as over HTTP (the call
 * opens: Call.open): a request whose key is missing, malformed or unknown is paid by its
 * address (429 past its budget, no lookup) and refused 401 with the API's error body
 * (`{"error": {"code": "unauthorized", …}}`, as on /v1) and the `WWW-Authenticate: Bearer
 * error="invalid_token"` challenge MCP clients read, with where to get a token
 * (`resource_metadata`). The key's own token is taken per message below; the key is checked again
 * once the message is in (callTool), and what the call holds goes back when the response closes.
 */
function authenticate(services: McpServices, log: Logger) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    // OAuth access tokens are taken here, for this deployment's MCP resource (mcpResource), besides API keys.
    const origin = services.publicOrigin;
    try {
      const call = await Call.open(
        services,
        bearerToken(header),
        (res.locals as RequestLocals).clientAddress,
        origin && mcpResource(origin),
      );
      (res.locals as RequestLocals).principal = call.principal;
      res.locals.call = call;
      res.once('close', () => call.end());
      return next();
    } catch (err) {
      noteError(res, err);
      if (err instanceof ApiError && err.code === 'unauthorized') {
        const description =
          header === undefined
            ? 'missing Authorization header'
            : bearerToken(header) === undefined
              ? 'malformed Authorization header'
              : err.message;
        // resource_metadata: where an assistant finds how to get a token (RFC 9728 §5.1).
        res.set(
          'WWW-Authenticate',
          `Bearer error="invalid_token", error_description="${description}"${origin ? `, ${challengeParams(origin)}` : ''}`,
        );
        return void res.status(401).json(toErrorBody(err, String(res.locals.requestId)).body);
      }
      if (err instanceof ApiError && err.code === 'rate_limited') {
        noteRefusal(res);
        for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
        return void res.status(429).json(errorResponse(null, -32000, `rate_limited: ${err.message}`));
      }
      log.error({ ...safeErrorFields(err), request_id: String(res.locals.requestId) }, 'MCP authentication failed');
      return void res
        .status(500)
        .json(errorResponse(null, -32603, `internal error; quote request id ${String(res.locals.requestId)} to support`));
    }
  };
}

/** The body, one JSON-RPC message at most MAX_BODY_BYTES long; a parse error answered as JSON-RPC's. */
function parsedJsonRpc() {
  const parseJsonRpc = express.json({ limit: MAX_BODY_BYTES, type: () => true, strict: false });
  return (req: Request, res: Response, next: (err?: unknown) => void) =>
    parseJsonRpc(req, res, (err?: unknown) => {
      if (!err) return next();
      const tooLarge = (err as { type?: string }).type === 'entity.too.large';
      res
        .status(tooLarge ? 413 : 400)
        .json(
          errorResponse(
            null,
            -32700,
            tooLarge ? `Parse error: body is over ${MAX_BODY_BYTES / 1024} KiB` : 'Parse error: body is not valid JSON',
          ),
        );
    });
}

/** What the SDK's transport checks of a request before reading its message, answered the same way here. */
function transportProblem(req: Request): { status: number; message: string } | undefined {
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return { status: 406, message: 'Not Acceptable: Client must accept both application/json and text/event-stream' };
  }
  if (!typeIs(req, ['application/json'])) return { status: 415, message: 'Unsupported Media Type: Content-Type must be application/json' };
  return undefined;
}

/** The SDK's check of a handshake-generation request's MCP-Protocol-Version header, for the tools/call it does not see. */
function handshakeVersionProblem(req: IncomingMessage): { status: number; message: string } | undefined {
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    return {
      status: 400,
      message: `Bad Request: Unsupported protocol version: ${version.slice(0, 40)} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    };
  }
  return undefined;
}
