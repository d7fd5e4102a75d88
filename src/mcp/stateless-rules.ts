import type { IncomingMessage } from 'node:http';
import { INVALID_PARAMS, INVALID_REQUEST, type JsonRpcMessage } from './json-rpc.ts';
import { CLIENT_CAPABILITIES_META, PROTOCOL_VERSION_META, requestMeta, STATELESS_VERSIONS, SUPPORTED_VERSIONS } from './protocol-era.ts';

/*
 * What MCP 2026-07-28 asks of a request before its method is looked at (basic/index "_meta",
 * basic/versioning, basic/transports/streamable-http "Request Metadata"), in the order a client
 * can act on: a malformed `_meta` (-32602), headers that do not say what the body says (-32020), a
 * version this server does not serve (-32022, with the ones it does). Each is HTTP 400.
 */

export const HEADER_MISMATCH = -32020;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

export interface StatelessRefusal {
  status: number;
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

/** The methods whose `params.name` (or `params.uri`) the `Mcp-Name` header mirrors. */
const NAMED_METHODS: Readonly<Record<string, 'name' | 'uri'>> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why a stateless request cannot be served as sent, or undefined when its envelope is right. */
export function statelessRefusal(req: IncomingMessage, message: JsonRpcMessage): StatelessRefusal | undefined {
  if (message.method === undefined) {
    return {
      status: 400,
      code: INVALID_REQUEST,
      message: 'Invalid Request: a client sends requests and notifications only (MCP 2026-07-28), not responses',
    };
  }
  if (message.id === undefined) return undefined; // a notification: nothing to check, nothing to answer
  const meta = requestMeta(message);
  if (message.params !== undefined && !isObject(message.params)) return invalidMeta('params must be an object');
  if (!meta) return invalidMeta('params._meta is missing: each request carries its protocol version and the client capabilities');
  const version = meta[PROTOCOL_VERSION_META];
  if (typeof version !== 'string' || version.length === 0)
    return invalidMeta(`params._meta["${PROTOCOL_VERSION_META}"] must be the protocol version (a string)`);
  if (!isObject(meta[CLIENT_CAPABILITIES_META]))
    return invalidMeta(`params._meta["${CLIENT_CAPABILITIES_META}"] must be the client's capabilities (an object)`);

  const headerVersion = header(req, 'mcp-protocol-version');
  if (headerVersion === undefined) return mismatch('the MCP-Protocol-Version header is missing');
  if (headerVersion !== version)
    return mismatch(`MCP-Protocol-Version header value '${clip(headerVersion)}' does not match params._meta value '${clip(version)}'`);
  if (!STATELESS_VERSIONS.includes(version)) {
    return {
      status: 400,
      code: UNSUPPORTED_PROTOCOL_VERSION,
      message: `Unsupported protocol version: ${clip(version)}`,
      data: { supported: [...SUPPORTED_VERSIONS], requested: version.slice(0, 100) },
    };
  }

  const method = header(req, 'mcp-method');
  if (method === undefined) return mismatch('the Mcp-Method header is missing');
  if (method !== message.method)
    return mismatch(`Mcp-Method header value '${clip(method)}' does not match body value '${clip(message.method)}'`);
  const named = NAMED_METHODS[message.method];
  if (named) {
    const bodyName = isObject(message.params) ? message.params[named] : undefined;
    const raw = header(req, 'mcp-name');
    const name = raw === undefined ? undefined : decodedHeaderValue(raw);
    if (raw !== undefined && name === undefined) return mismatch('the Mcp-Name header is not a valid header value');
    // A name that is not a string is invalid params, said by the method's own check.
    if (name === undefined && typeof bodyName === 'string')
      return mismatch(`the Mcp-Name header is missing (body value '${clip(bodyName)}')`);
    if (name !== undefined && name !== bodyName)
      return mismatch(`Mcp-Name header value '${clip(name)}' does not match body value '${clip(String(bodyName))}'`);
  }
  return undefined;
}

const invalidMeta = (why: string): StatelessRefusal => ({ status: 400, code: INVALID_PARAMS, message: `Invalid params: ${why}` });
const mismatch = (why: string): StatelessRefusal => ({ status: 400, code: HEADER_MISMATCH, message: `Header mismatch: ${why}` });
const clip = (text: string) => (text.length > 60 ? `${text.slice(0, 60)}…` : text);

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

const SENTINEL = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/;

/**
 * A mirrored header's value as the body would hold it (streamable-http "Value Encoding"): plain
 * visible ASCII as is, or `=?base64?…?=`, the UTF-8 bytes in Base64; undefined when neither.
 */
export function decodedHeaderValue(raw: string): string | undefined {
  const encoded = SENTINEL.exec(raw);
  if (encoded) {
    const bytes = Buffer.from(encoded[1]!, 'base64');
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    try {
      return text.decode(bytes);
    } catch {
      return undefined;
    }
  }
  return /^[\x20-\x7e\t]*$/.test(raw) ? raw : undefined;
}
