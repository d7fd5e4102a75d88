import type { IncomingMessage } from 'node:http';
import { errorResponse, INVALID_PARAMS, toolCallParams, type JsonRpcId, type JsonRpcMessage } from './json-rpc.ts';
import { SERVER_INFO_META, SUPPORTED_VERSIONS } from './protocol-era.ts';
import { INSTRUCTIONS, LIST_CACHING, SERVER_INFO, TOOLS } from './server-identity.ts';
import { statelessRefusal } from './stateless-rules.ts';
import { isTool } from './tools.ts';

/*
 * MCP 2026-07-28 (stateless) on /mcp: what a message asks for, decided without I/O. The edge
 * (createMcpEdge) pays for the message and writes the answer; a tools/call of one of our tools goes to
 * callTool, like a tools/call of the handshake generation.
 */

export const METHOD_NOT_FOUND = -32601;

/** What every result of this generation carries besides its own fields: it is complete (no input is asked), and who answered. */
export const STATELESS_RESULT = { resultType: 'complete', _meta: { [SERVER_INFO_META]: SERVER_INFO } } as const;

export type StatelessStep =
  | { kind: 'answer'; status: number; body: Record<string, unknown> }
  | { kind: 'accepted' }
  | { kind: 'tool'; id: JsonRpcId; name: string; args: unknown };

/** Methods earlier revisions had and 2026-07-28 removed: answered as unknown methods are (404, -32601), saying so. */
const REMOVED: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
  'tasks/result',
  'tasks/list',
]);

export function statelessStep(req: IncomingMessage, message: JsonRpcMessage): StatelessStep {
  const refused = statelessRefusal(req, message);
  if (refused) {
    const error: Record<string, unknown> = errorResponse(message.id, refused.code, refused.message);
    if (refused.data) (error.error as Record<string, unknown>).data = refused.data;
    return { kind: 'answer', status: refused.status, body: error };
  }
  // A notification: this revision defines none a client sends over HTTP; accepted and ignored.
  if (message.id === undefined) return { kind: 'accepted' };
  const id = message.id;
  const result = (fields: Record<string, unknown>) => ({
    kind: 'answer' as const,
    status: 200,
    body: { jsonrpc: '2.0', id, result: { ...fields, ...STATELESS_RESULT } },
  });
  switch (message.method) {
    case 'server/discover':
      return result({
        supportedVersions: [...SUPPORTED_VERSIONS],
        capabilities: { tools: {} },
        instructions: INSTRUCTIONS,
        ...LIST_CACHING,
      });
    case 'tools/list':
      return result({ tools: TOOLS, ...LIST_CACHING });
    case 'tools/call': {
      const params = toolCallParams(message.params);
      if ('problem' in params) return { kind: 'answer', status: 200, body: errorResponse(id, INVALID_PARAMS, params.problem) };
      // An unknown tool is a protocol error in this revision (server/tools "Error Handling"), not a tool result.
      if (!isTool(params.name))
        return {
          kind: 'answer',
          status: 200,
          body: errorResponse(id, INVALID_PARAMS, `Unknown tool: ${params.name.slice(0, 60)} (tools/list gives the tools)`),
        };
      return { kind: 'tool', id, name: params.name, args: params.args };
    }
    default: {
      const method = String(message.method).slice(0, 60);
      const why = REMOVED.has(message.method!)
        ? `${method} was removed in MCP 2026-07-28`
        : `${method} is not served here (tools: server/discover, tools/list, tools/call)`;
      return { kind: 'answer', status: 404, body: errorResponse(id, METHOD_NOT_FOUND, `Method not found: ${why}`) };
    }
  }
}
