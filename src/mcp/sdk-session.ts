import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import type { JsonRpcMessage } from './json-rpc.ts';
import { INSTRUCTIONS, SERVER_INFO, TOOLS } from './server-identity.ts';

/**
 * The messages of the handshake generation the SDK answers (initialize, tools/list, ping,
 * notifications): a server and a transport per request, since the SDK's stateless transport cannot
 * be reused. tools/call never comes here (createMcpEdge answers it with the page's bytes spliced in),
 * nor does a request whose params the SDK's schema refuses (handshakeParamsProblem).
 */
export async function answerWithSdk(req: Request, res: Response, message: JsonRpcMessage): Promise<void> {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS as never }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, message);
}
