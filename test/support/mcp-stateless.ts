import { readFileSync } from 'node:fs';
import { createAjv } from '../../src/contract/ajv.ts';

/** MCP 2026-07-28's official JSON schema (test/fixtures/mcp-schema-2026-07-28/SOURCE.md says where from). */
const schema = JSON.parse(readFileSync(new URL('../fixtures/mcp-schema-2026-07-28/schema.json', import.meta.url), 'utf8'));
const ajv = createAjv();
ajv.addSchema(schema, 'mcp-2026-07-28');

/** Why `value` is not a valid `definition` of the 2026-07-28 schema (`$defs` name), or null when it is. */
export function mcpSchemaErrors(definition: string, value: unknown): string | null {
  if (!schema.$defs[definition]) throw new Error(`no ${definition} in the 2026-07-28 schema`);
  const validate = ajv.getSchema(`mcp-2026-07-28#/$defs/${definition}`)!;
  return validate(value) ? null : ajv.errorsText(validate.errors, { dataVar: definition });
}

export const STATELESS_VERSION = '2026-07-28';

export const validMeta = (version = STATELESS_VERSION) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientInfo': { name: 'event-feed-tests', version: '1.0.0' },
  'io.modelcontextprotocol/clientCapabilities': {},
});

/** The headers a 2026-07-28 client sends with a message (streamable-http "Request Metadata"). */
export function statelessHeaders(
  key: string | undefined,
  method: string,
  params: Record<string, unknown> | undefined,
): Record<string, string> {
  const name = params?.name ?? params?.uri;
  return {
    ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': String(
      (params?._meta as Record<string, unknown> | undefined)?.['io.modelcontextprotocol/protocolVersion'] ?? STATELESS_VERSION,
    ),
    'mcp-method': method,
    ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
  };
}

export interface StatelessAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/**
 * One 2026-07-28 message to /mcp: `params` gets a valid `_meta` unless it has one (or is
 * `undefined`), the headers are a conformant client's, then `headers` changes them (a value of
 * `null` removes a header).
 */
export async function statelessPost(
  baseUrl: string,
  key: string | undefined,
  method: string,
  params: Record<string, unknown> | undefined,
  options: { id?: string | number | null; headers?: Record<string, string | null> } = {},
): Promise<StatelessAnswer> {
  const withMeta = params === undefined || '_meta' in params ? params : { ...params, _meta: validMeta() };
  const headers: Record<string, string> = statelessHeaders(key, method, withMeta);
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    delete headers[name.toLowerCase()];
    if (value !== null) headers[name.toLowerCase()] = value;
  }
  const id = options.id === undefined ? 1 : options.id;
  const body = { jsonrpc: '2.0', ...(id === null ? {} : { id }), method, ...(withMeta === undefined ? {} : { params: withMeta }) };
  const response = await fetch(`${baseUrl}/mcp`, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: text ? JSON.parse(text) : undefined };
}
