/*
 * The JSON-RPC 2.0 envelope of MCP messages, as far as this edge reads it: one message per HTTP
 * request (MCP 2025-06-18 removed batching), its method and id, and the error responses it gives.
 */

export type JsonRpcId = string | number;

/** A single JSON-RPC message: a request (with an id), or a notification or response (without one to answer). */
export interface JsonRpcMessage {
  method?: string;
  id?: JsonRpcId;
  params?: unknown;
}

export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why a body is not one JSON-RPC 2.0 message this server can take, or undefined when it is one. */
export function messageProblem(body: unknown): string | undefined {
  if (Array.isArray(body)) {
    return 'Invalid Request: JSON-RPC batches are not supported (MCP removed batching in its 2025-06-18 revision): send one message per HTTP request';
  }
  if (!isObject(body) || body.jsonrpc !== '2.0')
    return 'Invalid Request: the body must be one JSON-RPC 2.0 message ({"jsonrpc": "2.0", …})';
  if ('method' in body && typeof body.method !== 'string') return 'Invalid Request: method must be a string';
  if ('id' in body && typeof body.id !== 'string' && (typeof body.id !== 'number' || !Number.isFinite(body.id))) {
    return 'Invalid Request: id must be a string or a number';
  }
  return undefined;
}

/**
 * A JSON-RPC error response. Without the request's id (it could not be read, or there was none) the
 * response has no `id` member: MCP's schema (2025-11-25 and 2026-07-28) types `id` as a string or
 * an integer, never null.
 */
export const errorResponse = (id: JsonRpcId | null | undefined, code: number, message: string) =>
  id === null || id === undefined
    ? { jsonrpc: '2.0' as const, error: { code, message } }
    : { jsonrpc: '2.0' as const, error: { code, message }, id };

/** The tools/call request's tool name and arguments as sent, or why they cannot be used (an invalid-params message). */
export function toolCallParams(params: unknown): { name: string; args: unknown } | { problem: string } {
  if (!isObject(params)) return { problem: 'Invalid params: tools/call takes params {"name": <tool name>, "arguments": {…}}' };
  if (typeof params.name !== 'string' || params.name.length === 0) {
    return { problem: 'Invalid params: params.name must be the name of a tool (a string); tools/list gives them' };
  }
  // `arguments` exactly as sent (the SDK's re-parsing would drop an own `__proto__` key that HTTP refuses).
  return { name: params.name, args: params.arguments };
}
