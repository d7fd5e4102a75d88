import express, { type Express, type Request, type Response } from 'express';
import { ApiError } from '../errors.ts';
import type { RequestListener } from 'node:http';
import type { Logger } from '../log.ts';
import { mcpRouter } from '../mcp/router.ts';
import type { AppServices } from '../operations/context.ts';
import { createApiRouter } from './api-router.ts';
import { startRequest, type EdgeResponse } from './request-context.ts';
import { errorHandler, sendError } from './send-error.ts';
import { siteRouter } from './site.ts';
import { viewRouter } from './view-router.ts';

/** `/v1` and everything under it goes to the operations' edge (any case, as express would route it); the rest to express. */
const isApiPath = (url: string) => /^\/v1(?:[/?]|$)/i.test(url);

/** The HTTP service: the `/v1` operations; contract, probes, the web view and MCP at `/mcp` through express. */
export async function createHttpHandler(services: AppServices, log: Logger): Promise<RequestListener> {
  const api = createApiRouter(services, log);
  const site = siteApp(services, log);
  return (req, res: EdgeResponse) => {
    const locals = startRequest(req, res, log);
    if (isApiPath(req.url ?? '')) void api(req, res, locals);
    else site(req, res);
  };
}

function siteApp(services: AppServices, log: Logger): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(siteRouter(services.db));
  app.use(viewRouter());
  app.use(mcpRouter(services, log));
  // Anything else: the contract's error body, not express's HTML page.
  app.use((req: Request, res: Response) =>
    sendError(res, String(res.locals.requestId), new ApiError('invalid_argument', `nothing at ${req.method} ${req.path.slice(0, 100)}; the API is described at /openapi.json`, 404), log),
  );
  app.use(errorHandler(log));
  return app;
}
