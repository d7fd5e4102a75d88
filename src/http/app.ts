import express, { type Express } from 'express';
import type { Logger } from '../log.ts';
import { mcpRouter } from '../mcp/router.ts';
import type { AppServices } from '../operations/context.ts';
import { createApiRouter } from './api-router.ts';
import { authenticateBearer } from './authenticate.ts';
import { jsonObjectBody, noQueryParameters } from './json-body.ts';
import { requestContext } from './request-context.ts';
import { errorHandler } from './send-error.ts';
import { siteRouter } from './site.ts';
import { viewRouter } from './view-router.ts';

/** The HTTP service: contract and probes, MCP at `/mcp`, the `/v1` operations. */
export async function createApp(services: AppServices, log: Logger): Promise<Express> {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use((_req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });
  app.use(requestContext(log));
  app.use(siteRouter(services.db));
  app.use(viewRouter());
  app.use(mcpRouter(services, log));
  app.use('/v1', authenticateBearer(services), noQueryParameters, jsonObjectBody);
  const api = await createApiRouter(services, log);
  app.use('/v1', (req, res) => api(req, res));
  app.use(errorHandler(log));
  return app;
}
