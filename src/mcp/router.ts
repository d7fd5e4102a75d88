import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import express, { Router, type Request, type Response } from 'express';
import { mcpTools } from '../../generated/mcp-tools.ts';
import { authenticate } from '../auth/api-keys.ts';
import type { Principal } from '../auth/principal.ts';
import { RequestValidator } from '../contract/request-validator.ts';
import type { Logger } from '../log.ts';
import type { AppServices } from '../operations/context.ts';
import { MAX_BODY_BYTES } from '../http/json-body.ts';
import { callTool } from './tools.ts';

const SERVER_INFO = { name: 'event-feed', title: 'Flux des événements de messagerie', version: '1.0.0' };
const INSTRUCTIONS =
  'Relit les événements de messagerie (mail.*) d’un espace, dans l’ordre d’émission. ' +
  'Appelez event_feed sans after pour commencer au plus ancien événement conservé, puis passez next_cursor comme after.';

// Tool descriptors exactly as generated from the contract.
const TOOLS = mcpTools as unknown as Array<Record<string, unknown>>;

/**
 * The `arguments` of a tools/call exactly as the client sent them. The SDK re-parses params with
 * zod, which rebuilds objects and drops an own `__proto__` key: the tool would then accept what
 * HTTP refuses as an unknown parameter.
 */
function argumentsAsSent(body: unknown, id: string | number): unknown {
  const messages = Array.isArray(body) ? body : [body];
  const message = messages.find((m) => m && typeof m === 'object' && m.id === id && m.method === 'tools/call');
  return message?.params?.arguments;
}

/**
 * POST /mcp: MCP over Streamable HTTP, stateless with JSON responses. A server and a transport per
 * request (the SDK's stateless transport cannot be reused); the bearer key is checked before any
 * JSON-RPC is read.
 */
export function mcpRouter(services: AppServices, log: Logger): Router {
  const validator = new RequestValidator();
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

  router.post('/mcp', requireBearerAuth({ verifier }), jsonRpcBody, async (req: Request, res: Response) => {
    const principal = (req as Request & { auth: { extra: { principal: Principal } } }).auth.extra.principal;
    const requestId = String(res.locals.requestId);
    const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS as never }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      callTool(services, validator, principal, request.params.name, argumentsAsSent(req.body, extra.requestId) ?? request.params.arguments, requestId, log),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });

  router.all('/mcp', (_req, res) => {
    res.setHeader('Allow', 'POST');
    res.status(405).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: MCP is served statelessly over POST /mcp' }, id: null });
  });
  return router;
}
