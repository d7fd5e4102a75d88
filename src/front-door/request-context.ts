import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../auth/principal.ts';
import { ApiError, RateLimitedError, type LimitReason } from '../base/errors.ts';
import type { Logger } from '../base/log.ts';
import { newRequestId } from '../base/ids.ts';
import { operationLabel, type Metrics, type Transport } from '../metrics/metrics.ts';
import type { RefusalLog } from './refusal-log.ts';
import { spanLogFields } from '../tracing/log-fields.ts';
import { endServerSpan } from '../tracing/server-span.ts';
import { startServerSpan, type ServerSpan } from '../tracing/spans.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** What the edges know of a request: its id, and once authenticated, who is calling. */
export interface RequestLocals {
  requestId: string;
  /** Who pays for the request while no key does (clientAddress): every edge limits by it. */
  clientAddress: string;
  /** Where an answer refused by a rate limit is counted (it is not logged by itself). */
  refusals: RefusalLog;
  principal?: Principal;
  /** Which edge answers it (the MCP edge says so; everything else is http). */
  transport: Transport;
  /** The contract's operationId once the edge knows it (the /v1 route, the MCP tool called). */
  operation?: string;
  /** The tool named by an MCP tools/call, as sent (cut short): a known one is also the operation. */
  tool?: string;
  /** The contract's error code of a failed answer (noteError). */
  errorCode?: string;
  /** Which limit refused it, for rate_limited. */
  limit?: LimitReason;
  /** Bytes of a body written without Content-Length (MCP tool results, event streams), as the edge counted them. */
  bytes?: number;
  /** Set for the first refusals of a window (RefusalLog.note): their request line is written. */
  logRefusal?: boolean;
  /** The request's SERVER span while tracing is on (startServerSpan), ended with its answer. */
  trace?: ServerSpan;
}

/** A response as both edges see it: express keeps `locals` on it, the /v1 edge sets it first. */
export type EdgeResponse = ServerResponse & { locals?: RequestLocals };

/**
 * Every response carries a request id (the client's when it sent a sane one) and is
 * logged once at info level, except most of those refused by a rate limit: the edge that refuses
 * one counts it (noteRefusal, RefusalLog), and only the first few of a window get a line. With
 * metrics on, the same end of the response is counted (Metrics.request). Runs first for every
 * request, whichever edge answers it; express keeps the `locals` object it finds on the response.
 */
export function startRequest(
  req: IncomingMessage,
  res: EdgeResponse,
  log: Logger,
  clientAddress: string,
  refusals: RefusalLog,
  metrics?: Metrics,
): RequestLocals {
  const given = req.headers['x-request-id'];
  const requestId = typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : newRequestId();
  const locals: RequestLocals = { requestId, clientAddress, refusals, transport: 'http' };
  const trace = startServerSpan(req.headers, req.method ?? 'HTTP');
  if (trace) {
    locals.trace = trace;
    // 'close' also ends one whose client left before its answer was written.
    res.once('close', () => endServerSpan(trace.span, locals, res.statusCode, res.writableFinished));
  }
  res.locals = locals;
  res.setHeader('X-Request-Id', requestId);
  // Only when requests are logged or counted: a 'finish' listener on every response cost a fifth
  // of an emit's server CPU (bench: 0.20 against 0.16 ms per event).
  const logging = log.isLevelEnabled('info');
  if (logging || metrics) {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      metrics?.request({
        operation: operationLabel(locals.operation),
        transport: locals.transport,
        status: res.statusCode,
        errorCode: locals.errorCode,
        limit: locals.limit,
        seconds: ms / 1000,
      });
      if (!logging || (res.statusCode === 429 && !locals.logRefusal)) return;
      log.info(requestLine(req, res, locals, ms), 'request');
    });
  }
  return locals;
}

/**
 * What a request's line says: method, path and status; who called (the key's id and its
 * workspace, never the key itself), what it called and how it ended; never headers, query strings
 * or bodies (keys, cursors).
 */
function requestLine(req: IncomingMessage, res: EdgeResponse, locals: RequestLocals, ms: number): Record<string, unknown> {
  const path = (req.url ?? '').split('?', 1)[0];
  const length = res.getHeader('content-length');
  return {
    request_id: locals.requestId,
    method: req.method,
    path,
    status: res.statusCode,
    ms,
    bytes: locals.bytes ?? (length === undefined ? 0 : Number(length)),
    transport: locals.transport,
    operation: locals.operation,
    tool: locals.tool,
    workspace_id: locals.principal?.workspaceId,
    key_id: locals.principal?.keyId,
    error_code: locals.errorCode,
    limit: locals.limit,
    ...(locals.trace ? spanLogFields(locals.trace.span) : {}),
  };
}

/** Counts an answer refused by a rate limit (429), once, where it is sent. */
export function noteRefusal(res: ServerResponse): void {
  const locals = (res as EdgeResponse).locals;
  if (locals) locals.logRefusal = locals.refusals.note();
}

/** Notes what a failed answer's line and metrics say of it: the contract's code, and the limit that refused it. */
export function noteError(res: ServerResponse, err: unknown): void {
  const locals = (res as EdgeResponse).locals;
  if (!locals) return;
  locals.errorCode = err instanceof ApiError ? err.code : 'internal';
  if (err instanceof RateLimitedError) locals.limit = err.reason;
}
