import type { IncomingMessage, RequestListener } from 'node:http';
import type { Logger } from '../base/log.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { clientAddress } from './client-address.ts';
import { RefusalLog } from './refusal-log.ts';
import { startRequest, type EdgeResponse, type RequestLocals } from './request-context.ts';
import { inContext } from '../tracing/spans.ts';
import { setSecurityHeaders } from './security-headers.ts';

/** A transport served over HTTP (the API and its site, MCP): which requests it takes, and how it answers one. */
export interface Edge {
  takes(req: IncomingMessage): boolean;
  handle(req: IncomingMessage, res: EdgeResponse, locals: RequestLocals): void;
}

export interface FrontDoorSettings {
  /** How many proxies in front append to X-Forwarded-For (clientAddress); 0: the socket's peer is the client. */
  trustProxyHops: number;
  /** Counts every answered request when metrics are on. */
  metrics?: Metrics;
}

/**
 * The server's one request listener: every request gets its id, its client address and its log
 * line (startRequest) and its security headers (setSecurityHeaders) whichever edge answers it, then
 * goes to the first edge that takes it.
 */
export function frontDoor(log: Logger, settings: FrontDoorSettings, edges: readonly Edge[]): RequestListener {
  const refusals = new RefusalLog(log);
  return (req, res: EdgeResponse) => {
    const locals = startRequest(req, res, log, clientAddress(req, settings.trustProxyHops), refusals, settings.metrics);
    setSecurityHeaders(req, res);
    const edge = edges.find((candidate) => candidate.takes(req));
    if (!edge) throw new Error(`no edge takes ${req.method} ${req.url}: the last edge must take every request`);
    // Traced, the request is handled in its server span's context: what it calls makes its children.
    if (locals.trace) inContext(locals.trace.context, () => edge.handle(req, res, locals));
    else edge.handle(req, res, locals);
  };
}
