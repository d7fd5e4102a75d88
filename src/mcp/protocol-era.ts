import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { IncomingMessage } from 'node:http';
import type { JsonRpcMessage } from './json-rpc.ts';

/**
 * MCP's two protocol generations, both served on /mcp (a "dual-era" server, MCP 2026-07-28,
 * basic/versioning):
 * - handshake revisions (2025-06-18, 2025-11-25 and the SDK's older ones): an `initialize`, then
 *   requests under the negotiated version; the SDK answers them (answerWithSdk), as it negotiates
 *   up to 2025-11-25;
 * - stateless revisions (2026-07-28): no handshake, each request names its version and the client's
 *   capabilities in `params._meta`; the SDK does not speak it yet, so this edge does
 *   (statelessRefusal, statelessStep).
 */
export const STATELESS_VERSIONS: readonly string[] = ['2026-07-28'];
export const HANDSHAKE_VERSIONS: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS;
/** Every version served, newest first: server/discover's `supportedVersions`, and what an unsupported version is told. */
export const SUPPORTED_VERSIONS: readonly string[] = [...STATELESS_VERSIONS, ...HANDSHAKE_VERSIONS];

export const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
export const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

/** The request's `params._meta`, when it is an object. */
export function requestMeta(message: JsonRpcMessage): Record<string, unknown> | undefined {
  const params = message.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return undefined;
  const meta = (params as Record<string, unknown>)._meta;
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>) : undefined;
}

/**
 * Whether a message speaks the stateless generation. The version it claims is its `_meta`'s, or
 * else its `MCP-Protocol-Version` header's: none (an `initialize`, a client of 2025-03-26) or a
 * handshake version is the handshake generation; anything else is answered by the stateless
 * rules, which refuse a version they do not serve with the list of those they do.
 */
export function speaksStateless(req: IncomingMessage, message: JsonRpcMessage): boolean {
  const meta = requestMeta(message);
  const claimed = meta && Object.hasOwn(meta, PROTOCOL_VERSION_META) ? meta[PROTOCOL_VERSION_META] : req.headers['mcp-protocol-version'];
  if (claimed === undefined) return false;
  return !(typeof claimed === 'string' && HANDSHAKE_VERSIONS.includes(claimed));
}
