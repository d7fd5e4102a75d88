/**
 * Raw HTTP for the fuzz tests: exact bytes out (Buffer bodies, any header, any method), everything
 * back, a hard timeout (a hang is a failure, not a slow test), and the response checks shared by
 * the properties.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { contractErrors } from './contract.ts';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

export interface RawRequest {
  method?: string;
  path: string;
  headers?: Record<string, string | undefined>;
  body?: Buffer | string;
  /** Send the body with Transfer-Encoding: chunked instead of Content-Length. */
  chunked?: boolean;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const TIMEOUT_MS = 15_000;

export function sendRaw(base: string, request: RawRequest): Promise<RawResponse> {
  const url = new URL(base);
  const body = request.body === undefined ? undefined : Buffer.isBuffer(request.body) ? request.body : Buffer.from(request.body, 'utf8');
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers ?? {})) if (value !== undefined) headers[name] = value;
  if (body !== undefined) {
    if (request.chunked) headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = String(body.length);
  }
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(
      { host: url.hostname, port: url.port, method: request.method ?? 'POST', path: request.path, headers, agent, setHost: true },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json });
        });
      },
    );
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms (hang)`)));
    // A server may answer (413, 401) before it has read a large body: a write error after the
    // answer is not a failure; one before it is.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    if (body === undefined) req.end();
    else if (request.chunked) {
      for (let i = 0; i < body.length; i += 16_384) req.write(body.subarray(i, i + 16_384));
      req.end();
    } else req.end(body);
  });
}

/** What a /v1 status must carry as its error code. */
export const V1_CODE_FOR_STATUS: Record<number, string> = {
  400: 'invalid_argument',
  404: 'invalid_argument',
  405: 'invalid_argument',
  413: 'invalid_argument',
  415: 'invalid_argument',
  401: 'unauthorized',
  403: 'forbidden',
};
export const V1_STATUSES = new Set([200, 201, 400, 401, 403, 404, 405, 413, 415]);

const show = (res: RawResponse) => `${res.status} ${res.text.slice(0, 300)}`;

/** A /v1 answer: an allowed status (never 5xx); errors in the contract's shape with the status's code. */
export function checkV1(res: RawResponse, label: string): void {
  const where = `${label} → ${show(res)}`;
  assert.ok(V1_STATUSES.has(res.status), `status not allowed: ${where}`);
  assert.ok(typeof res.headers['x-request-id'] === 'string', `X-Request-Id: ${where}`);
  if (res.status >= 400) {
    assert.match(String(res.headers['content-type']), /^application\/json/, `error content type: ${where}`);
    assert.ok(res.json !== undefined, `error body is JSON: ${where}`);
    assert.equal(contractErrors('Error', res.json), null, `contract Error shape: ${where}`);
    assert.equal(res.json.error.code, V1_CODE_FOR_STATUS[res.status], `code for ${res.status}: ${where}`);
    if (res.status === 401) assert.match(String(res.headers['www-authenticate']), /^Bearer/, `WWW-Authenticate: ${where}`);
  }
}

/** A 2xx answer of an operation is contract-valid. */
export function checkV1Success(res: RawResponse, path: string, label: string): void {
  const component = path === '/v1/event_feed' ? 'EventFeedResponse' : 'EmitEventResponse';
  assert.equal(contractErrors(component, res.json), null, `${component}: ${label} → ${show(res)}`);
}

// 404: a method MCP 2026-07-28 does not serve (-32601).
export const MCP_STATUSES = new Set([200, 202, 400, 401, 404, 405, 406, 413, 415]);
const TOOL_ERROR_CODES = new Set(['invalid_argument', 'unauthorized', 'forbidden']);

/**
 * An /mcp answer: an allowed status; 202 (notifications only) empty; 401 with WWW-Authenticate
 * (its body is the API's error object, code `unauthorized`); otherwise a JSON-RPC 2.0 body. No JSON-RPC internal
 * error (-32603), and no tool error with code `internal`: those are the MCP faces of a 500.
 */
export function checkMcp(res: RawResponse, label: string): void {
  const where = `${label} → ${show(res)}`;
  assert.ok(MCP_STATUSES.has(res.status), `status not allowed: ${where}`);
  if (res.status === 202) return assert.equal(res.text, '', `202 has no body: ${where}`);
  assert.ok(res.json !== undefined, `body is JSON: ${where}`);
  if (res.status === 401) {
    assert.match(String(res.headers['www-authenticate']), /^Bearer/, `WWW-Authenticate: ${where}`);
    assert.equal(res.json.error?.code, 'unauthorized', `the API's error body: ${where}`);
    return;
  }
  const messages = Array.isArray(res.json) ? res.json : [res.json];
  assert.ok(messages.length > 0, `non-empty JSON-RPC answer: ${where}`);
  for (const message of messages) {
    assert.equal(message?.jsonrpc, '2.0', `JSON-RPC 2.0: ${where}`);
    assert.ok('result' in message !== 'error' in message, `result xor error: ${where}`);
    if ('error' in message) {
      assert.ok(Number.isInteger(message.error.code) && typeof message.error.message === 'string', `JSON-RPC error object: ${where}`);
      // -32603 is the MCP face of a 500: never for what a client sent (params the SDK's schema refuses are -32602 too).
      assert.notEqual(message.error.code, -32603, `JSON-RPC internal error: ${where}`);
      assert.ok(res.status !== 200 || 'id' in message, `id: ${where}`);
    } else if (message.result?.isError) {
      const error = message.result._meta?.['event-feed/error'];
      assert.ok(error && TOOL_ERROR_CODES.has(error.code), `tool error code (never internal): ${where}`);
      assert.ok(String(message.result.content?.[0]?.text).startsWith(`${error.code} : `), `tool error text starts with the code: ${where}`);
    } else if (message.result?.structuredContent !== undefined) {
      assert.equal(contractErrors('EventFeedResponse', message.result.structuredContent), null, `structuredContent: ${where}`);
    }
  }
  if (res.status !== 200)
    assert.ok(
      messages.every((m: any) => 'error' in m),
      `a ${res.status} carries a JSON-RPC error: ${where}`,
    );
}
