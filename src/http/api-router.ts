import type { Request, Response } from 'express';
import { OpenAPIBackend, type Context } from 'openapi-backend';
import type { Principal } from '../auth/principal.ts';
import { createAjv } from '../contract/ajv.ts';
import { loadSpec } from '../contract/spec.ts';
import { describeValidationErrors } from '../contract/validation-errors.ts';
import { ApiError, invalidArgument, unauthorized } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { Services } from '../operations/context.ts';
import { operations } from '../operations/registry.ts';
import { sendError } from './send-error.ts';

/**
 * Routes and validates `/v1/*` against the contract, then calls the operation. The caller is
 * already authenticated (authenticate.ts) and the body parsed (json-body.ts).
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
      // The key was resolved before the body was read (authenticate.ts); here it only gates routing.
      bearerAuth: (_c, _req, res: Response) => res.locals.principal !== undefined,
    },
    handlers: {
      unauthorizedHandler: (_c, _req, res: Response) => sendError(res, unauthorized(), log),
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
              // Encoded once here: given a string, express measures its UTF-8 length and Node then encodes it again.
              res.status(outcome.created ? 201 : 200).type('application/json').send(Buffer.from(outcome.json));
            } catch (err) {
              sendError(res, err, log);
            }
          },
        ]),
      ),
    },
  });
  await api.init();
  // openapi-backend rebuilds its flat list of operations from the definition (a lodash chain over
  // every path) on each request it routes; the definition never changes after init, so build it once.
  const routes = api.router.getOperations();
  api.router.getOperations = () => routes;

  return (req: Request, res: Response) =>
    api.handleRequest(
      { method: req.method, path: req.baseUrl + req.path, body: req.body, query: {}, headers: req.headers as Record<string, string> },
      req,
      res,
    );
}
