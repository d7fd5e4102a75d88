import { InitializeRequestSchema, ListToolsRequestSchema, PingRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { JsonRpcMessage } from './json-rpc.ts';

/**
 * The requests of the handshake generation the SDK answers, with the schema it holds them to and
 * the params a person should send. The SDK itself answers params its schema refuses with -32603
 * (an internal error) and the schema library's issue list as the message; these are checked here
 * first and answered -32602 (invalid params), naming what is wrong in words.
 */
const REQUESTS: Readonly<
  Record<
    string,
    {
      schema: { safeParse(value: unknown): { success: boolean; error?: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey> }> } } };
      takes: string;
    }
  >
> = {
  initialize: {
    schema: InitializeRequestSchema,
    takes: '{"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": …, "version": …}}',
  },
  ping: { schema: PingRequestSchema, takes: 'no params, or {"_meta": {…}}' },
  'tools/list': { schema: ListToolsRequestSchema, takes: 'no params, or {"cursor": "…"}' },
};

/** Why a handshake-generation request's params are not what its method takes (an invalid-params message), or undefined. */
export function handshakeParamsProblem(message: JsonRpcMessage): string | undefined {
  if (message.id === undefined || message.method === undefined || !Object.hasOwn(REQUESTS, message.method)) return undefined;
  const { schema, takes } = REQUESTS[message.method]!;
  const parsed = schema.safeParse({ method: message.method, params: message.params });
  if (parsed.success) return undefined;
  const paths = [...new Set((parsed.error?.issues ?? []).map((issue) => ['params', ...issue.path.slice(1)].map(String).join('.')))].slice(
    0,
    5,
  );
  return `Invalid params: ${message.method} takes ${takes}; wrong or missing: ${paths.join(', ') || 'params'}`;
}
