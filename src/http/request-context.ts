import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Principal } from '../auth/principal.ts';
import type { Logger } from '../log.ts';
import { newRequestId } from '../ids.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** What the edges know of a request: its id, and once authenticated, who is calling. */
export interface RequestLocals {
  requestId: string;
  principal?: Principal;
}

/** A response as both edges see it: express keeps `locals` on it, the /v1 edge sets it first. */
export type EdgeResponse = ServerResponse & { locals?: RequestLocals };

/**
 * Every response carries a request id (the client's when it sent a sane one), `nosniff`, and is
 * logged once. Runs first for every request, whichever edge answers it; express keeps the
 * `locals` object it finds on the response.
 */
export function startRequest(req: IncomingMessage, res: EdgeResponse, log: Logger): RequestLocals {
  const given = req.headers['x-request-id'];
  const requestId = typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : newRequestId();
  const locals: RequestLocals = { requestId };
  res.locals = locals;
  res.setHeader('X-Request-Id', requestId);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (log.isLevelEnabled('info')) {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      // Method, path and status only: never headers (keys), query strings or bodies (cursors).
      const path = (req.url ?? '').split('?', 1)[0];
      log.info({ request_id: requestId, method: req.method, path, status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }, 'request');
    });
  }
  return locals;
}
