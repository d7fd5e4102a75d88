import express, { type Express } from 'express';
import type { Edge } from '../front-door/front-door.ts';
import { errorHandler, nothingHere, sendError } from '../front-door/send-error.ts';
import type { Logger } from '../base/log.ts';
import { payByAddress } from '../calls/anonymous.ts';
import type { CallServices } from '../calls/call-services.ts';
import { createApiRouter } from './api-router.ts';
import { createEventStreamRoute, EVENT_STREAM_PATH } from './event-stream-get.ts';
import { siteRouter } from './site.ts';
import { viewRouter } from './view-router.ts';

/** `/v1` and everything under it goes to the operations' edge (any case, as express would route it); the rest to express. */
const isApiPath = (url: string) => /^\/v1(?:[/?]|$)/i.test(url);

/**
 * What no key pays for is paid by the client's address: the contract, the reference page, the web
 * view, unknown paths. Not the probes: a balancer refused by a limit would take the instance out,
 * and they cost nothing (/readyz answers from one check per 100 ms: siteRouter); nor /version, a
 * constant answer a monitor may poll as often as /healthz. Not `/mcp` (served by the MCP edge, and
 * anything under it answered 404 here): its edge authenticates like `/v1`.
 */
const isPaidByAddress = (url: string) => !/^\/(?:healthz|readyz|version|mcp)(?:[/?]|$)/i.test(url);

/** What the HTTP edge needs: the calls' services, and whether the server is draining (/readyz). */
export type HttpServices = CallServices & { lifecycle: { readonly draining: boolean } };

export interface HttpEdgeSettings {
  /** Origins whose pages may read the event stream (CORS_ALLOWED_ORIGINS). */
  corsAllowedOrigins: readonly string[];
}

/**
 * The HTTP service: the `/v1` operations, and event_feed's stream for an EventSource (a GET
 * authenticated by a stream token: createEventStreamRoute); the contract, probes and the web view
 * through express. It takes every request.
 */
export function createHttpEdge(services: HttpServices, log: Logger, settings: HttpEdgeSettings = { corsAllowedOrigins: [] }): Edge {
  const api = createApiRouter(services, log);
  const eventStream = createEventStreamRoute(services, log, settings.corsAllowedOrigins);
  const site = siteApp(services, log);
  return {
    takes: () => true,
    handle(req, res, locals) {
      const url = req.url ?? '';
      if (url.split('?', 1)[0] === EVENT_STREAM_PATH) return void eventStream(req, res, locals);
      if (isApiPath(url)) return void api(req, res, locals);
      try {
        if (isPaidByAddress(url)) payByAddress(services.rateLimiter, locals.clientAddress);
      } catch (err) {
        return sendError(res, locals.requestId, err, log);
      }
      site(req, res);
    },
  };
}

function siteApp(services: HttpServices, log: Logger): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(siteRouter(services.store, services.lifecycle));
  app.use(viewRouter());
  app.use(nothingHere(log));
  app.use(errorHandler(log));
  return app;
}
