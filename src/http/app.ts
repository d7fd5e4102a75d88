import express, { type Express, type Request, type Response } from 'express';
import { ApiError } from '../errors.ts';
import type { RequestListener } from 'node:http';
import type { Logger } from '../log.ts';
import { mcpRouter } from '../mcp/router.ts';
import type { AppServices } from '../operations/context.ts';
import { createApiRouter } from './api-router.ts';
import { clientAddress } from './client-address.ts';
import { RefusalLog } from './refusal-log.ts';
import { startRequest, type EdgeResponse } from './request-context.ts';
import { errorHandler, sendError } from './send-error.ts';
import { siteRouter } from './site.ts';
import { viewRouter } from './view-router.ts';

/** `/v1` and everything under it goes to the operations' edge (any case, as express would route it); the rest to express. */
const isApiPath = (url: string) => /^\/v1(?:[/?]|$)/i.test(url);

/**
 * What no key pays for is paid by the client's address: the contract, the reference page, the web
 * view, unknown paths. Not the probes: a balancer refused by a limit would take the instance out,
 * and they cost nothing (/readyz answers from one check per 100 ms: site.ts); nor /version, a
 * constant answer a monitor may poll as often as /healthz. Not `/mcp`:
 * its edge authenticates like `/v1` (authenticate.ts).
 */
const isPaidByAddress = (url: string) => !/^\/(?:healthz|readyz|version|mcp)(?:[/?]|$)/i.test(url);

export interface EdgeSettings {
  /** How many proxies in front append to X-Forwarded-For (client-address.ts); 0: the socket's peer is the client. */
  trustProxyHops: number;
}

/** The HTTP service: the `/v1` operations; contract, probes, the web view and MCP at `/mcp` through express. */
export async function createHttpHandler(services: AppServices, log: Logger, edge: EdgeSettings = { trustProxyHops: 0 }): Promise<RequestListener> {
  const api = createApiRouter(services, log);
  const site = siteApp(services, log);
  const refusals = new RefusalLog(log);
  return (req, res: EdgeResponse) => {
    const url = req.url ?? '';
    const locals = startRequest(req, res, log, clientAddress(req, edge.trustProxyHops), refusals);
    if (isApiPath(url)) return void api(req, res, locals);
    try {
      if (isPaidByAddress(url)) services.rateLimiter.takeForAddress(locals.clientAddress);
    } catch (err) {
      return sendError(res, locals.requestId, err, log);
    }
    site(req, res);
  };
}

function siteApp(services: AppServices, log: Logger): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(siteRouter(services.store));
  app.use(viewRouter());
  app.use(mcpRouter(services, log));
  // Anything else: the contract's error body, not express's HTML page.
  app.use((req: Request, res: Response) =>
    sendError(res, String(res.locals.requestId), new ApiError('invalid_argument', `nothing at ${req.method} ${req.path.slice(0, 100)}; the API is described at /openapi.json`, 404), log),
  );
  app.use(errorHandler(log));
  return app;
}
