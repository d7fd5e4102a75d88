import type { Request, Response } from 'express';
import { OpenAPIBackend, type Context } from 'openapi-backend';
import { authenticate } from '../auth/api-keys.ts';
import type { Principal } from '../auth/principal.ts';
import { createAjv } from '../contract/ajv.ts';
import { loadSpec } from '../contract/spec.ts';
import { describeValidationErrors } from '../contract/validation-errors.ts';
import { ApiError, invalidArgument, unauthorized } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Services } from '../operations/context.ts';
import { operations } from '../operations/registry.ts';
import { bearerToken } from './bearer.ts';
import { sendError } from './send-error.ts';

/**
 * Routes and validates `/v1/*` against the contract, then calls the operation. Order per request
 * (openapi-backend): route → bearer auth → validation → operation, so a caller without a valid key
 * learns nothing about the body it sent.
 */
export async function createApiRouter(services: Services, log: Logger) {
  const api = new OpenAPIBackend({
    definition: loadSpec() as never,
    // quick: skip openapi-backend's own definition check, which knows only OpenAPI 3.0 and rejects
    // this 3.1 document; the contract is checked by `redocly lint` instead. Validators compile lazily.
    quick: true,
    strict: true,
    validate: true,
    customizeAjv: (_draft07, options) => createAjv(options) as never,
    securityHandlers: {
      bearerAuth: async (_c, _req, res: Response) => {
        const token = bearerToken(_req.headers.authorization);
        if (!token) return false;
        try {
          const principal = await authenticate(services.db, token);
          if (principal) res.locals.principal = principal;
          return principal !== undefined;
        } catch (err) {
          // A database failure is not the caller's fault: remember it, answer 500, not 401.
          res.locals.authFailure = err;
          return false;
        }
      },
    },
    handlers: {
      unauthorizedHandler: (_c, _req, res: Response) =>
        sendError(res, res.locals.authFailure ?? unauthorized(), log),
      validationFail: (c: Context, _req, res: Response) =>
        sendError(res, invalidArgument(describeValidationErrors(c.validation.errors as never, c.operation.operationId ?? '')), log),
      notFound: (c: Context, _req, res: Response) =>
        sendError(res, new ApiError('invalid_argument', `no operation at ${c.request.path}; see /openapi.json`, 404), log),
      methodNotAllowed: (c: Context, _req, res: Response) => {
        res.setHeader('Allow', 'POST');
        sendError(res, new ApiError('invalid_argument', `${c.request.method.toUpperCase()} is not allowed here: operations are called with POST`, 405), log);
      },
      ...Object.fromEntries(
        Object.entries(operations).map(([operationId, run]) => [
          operationId,
          async (c: Context, _req: Request, res: Response) => {
            try {
              const principal = res.locals.principal as Principal;
              const outcome = await run({ ...services, principal }, c.request.requestBody);
              res.status(outcome.created ? 201 : 200).type('application/json').send(outcome.json);
            } catch (err) {
              sendError(res, err, log);
            }
          },
        ]),
      ),
    },
  });
  await api.init();

  return (req: Request, res: Response) =>
    api.handleRequest(
      { method: req.method, path: req.baseUrl + req.path, body: req.body, query: {}, headers: req.headers as Record<string, string> },
      req,
      res,
    );
}
