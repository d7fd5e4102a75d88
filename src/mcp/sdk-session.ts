import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import { mcpTools } from '../../generated/mcp-tools.ts';
import type { JsonRpcMessage } from './json-rpc.ts';

const SERVER_INFO = { name: 'event-feed', title: 'Flux des événements de messagerie', version: '1.0.0' };
const INSTRUCTIONS =
  'Relit les événements de messagerie (mail.*) d’un espace, dans l’ordre d’émission. ' +
  'Appelez event_feed sans after pour commencer au plus ancien événement conservé, puis passez next_cursor comme after.';

// Tool descriptors exactly as generated from the contract.
const TOOLS = mcpTools as unknown as Array<Record<string, unknown>>;

/**
 * The messages the SDK answers (initialize, tools/list, ping, notifications): a server and a
 * transport per request, since the SDK's stateless transport cannot be reused. tools/call never
 * comes here (mcp/edge.ts answers it with the page's bytes spliced in).
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
