import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import express, { Router, type Request, type Response } from 'express';
import { mcpTools } from '../../generated/mcp-tools.ts';
import { authenticate } from '../auth/api-keys.ts';
import type { Principal } from '../auth/principal.ts';
import type { Logger } from '../log.ts';
import type { AppServices } from '../operations/context.ts';
import { bearerToken } from '../http/bearer.ts';
import { MAX_BODY_BYTES } from '../http/json-body.ts';
import { callTool } from './tools.ts';

const SERVER_INFO = { name: 'event-feed', title: 'Flux des événements de messagerie', version: '1.0.0' };
const INSTRUCTIONS =
  'Relit les événements de messagerie (mail.*) d’un espace, dans l’ordre d’émission. ' +
  'Appelez event_feed sans after pour commencer au plus ancien événement conservé, puis passez next_cursor comme after.';

// Tool descriptors exactly as generated from the contract.
const TOOLS = mcpTools as unknown as Array<Record<string, unknown>>;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const toolCalls = (body: unknown): Array<Record<string, any>> =>
  (Array.isArray(body) ? body : [body]).filter((m) => isPlainObject(m) && m.method === 'tools/call' && isPlainObject(m.params));

/**
 * The `arguments` of a tools/call exactly as the client sent them (undefined when absent). The
 * SDK re-parses params with zod, which rebuilds objects and drops an own `__proto__` key: the tool
 * would then accept what HTTP refuses as an unknown parameter.
 */
function argumentsAsSent(body: unknown, id: string | number): unknown {
  return toolCalls(body).find((m) => m.id === id)?.params.arguments;
}

/**
 * The body as the SDK gets it: a tools/call whose `arguments` is not an object fails the SDK's own
 * parameter check with a bare "Internal error". It gets `{}` instead, and the tool, which reads
 * the arguments as sent, refuses them as HTTP refuses a body that is not a JSON object.
 */
function withObjectArguments(body: unknown): unknown {
  const fix = (m: unknown) =>
    toolCalls([m]).length && 'arguments' in (m as any).params && !isPlainObject((m as any).params.arguments)
      ? { ...(m as object), params: { ...(m as any).params, arguments: {} } }
      : m;
  return Array.isArray(body) ? body.map(fix) : fix(body);
}

/**
 * POST /mcp: MCP over Streamable HTTP, stateless with JSON responses. A server and a transport per
 * request (the SDK's stateless transport cannot be reused); the bearer key is checked before any
 * JSON-RPC is read.
 */
export function mcpRouter(services: AppServices, log: Logger): Router {
  const router = Router();
  const verifier = {
    async verifyAccessToken(token: string) {
      const principal = await authenticate(services.db, token);
      if (!principal) throw new InvalidTokenError('missing or invalid API key');
      // Keys do not expire; the SDK insists on an expiry, so give it one past this request.
      return { token, clientId: principal.keyId, scopes: [...principal.permissions], expiresAt: Math.floor(Date.now() / 1000) + 3600, extra: { principal } };
    },
  };

  const parseJsonRpc = express.json({ limit: MAX_BODY_BYTES, type: () => true });
  const jsonRpcBody = (req: Request, res: Response, next: (err?: unknown) => void) =>
    parseJsonRpc(req, res, (err?: unknown) => {
      if (!err) return next();
      const tooLarge = (err as { type?: string }).type === 'entity.too.large';
      res.status(tooLarge ? 413 : 400).json({
        jsonrpc: '2.0',
        error: { code: -32700, message: tooLarge ? `Parse error: body is over ${MAX_BODY_BYTES / 1024} KiB` : 'Parse error: body is not valid JSON' },
        id: null,
      });
    });

  // The SDK takes the second space-separated word as the token and ignores the rest: hold the
  // header to the same form HTTP requires, so both transports refuse `Bearer <key> <junk>`.
  const sameHeaderRuleAsHttp = (req: Request, res: Response, next: () => void) => {
    const header = req.headers.authorization;
    if (header === undefined || bearerToken(header) !== undefined) return next();
    res.set('WWW-Authenticate', 'Bearer error="invalid_token", error_description="malformed Authorization header"');
    res.status(401).json({ error: 'invalid_token', error_description: 'malformed Authorization header' });
  };

  router.post('/mcp', sameHeaderRuleAsHttp, requireBearerAuth({ verifier }), jsonRpcBody, async (req: Request, res: Response) => {
    const principal = (req as Request & { auth: { extra: { principal: Principal } } }).auth.extra.principal;
    const requestId = String(res.locals.requestId);
    const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS as never }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      callTool(services, principal, request.params.name, argumentsAsSent(req.body, extra.requestId), requestId, log),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, withObjectArguments(req.body));
  });

  router.all('/mcp', (_req, res) => {
    res.setHeader('Allow', 'POST');
    res.status(405).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: MCP is served statelessly over POST /mcp' }, id: null });
  });
  return router;
}
