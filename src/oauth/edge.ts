import { TooManyRequestsError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { metadataHandler } from '@modelcontextprotocol/sdk/server/auth/handlers/metadata.js';
import { createOAuthMetadata, mcpAuthRouter } from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { OAuthMetadata, OAuthProtectedResourceMetadata } from '@modelcontextprotocol/sdk/shared/auth.js';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { IncomingMessage } from 'node:http';
import type { Edge } from '../front-door/front-door.ts';
import { noteError, noteRefusal } from '../front-door/request-context.ts';
import { nothingHere } from '../front-door/send-error.ts';
import type { Logger } from '../base/log.ts';
import { safeErrorFields } from '../base/log.ts';
import type { RateLimiter } from '../limits/rate-limiter.ts';
import type { Services } from '../operations/context.ts';
import { normalizedOrigin } from '../net/origins.ts';
import { OAuthAddressLimits } from './address-limits.ts';
import { ClientMetadataDocuments } from './client-metadata-documents.ts';
import { OAuthClients } from './clients.ts';
import { authorizeGate, keepErrorRedirectsVerified } from './authorize-gate.ts';
import { consentHandler } from './consent.ts';
import { OAuthProvider } from './provider.ts';
import { withRequestAddress } from './request-address.ts';
import { issuerUrl, mcpResource, OAUTH_SCOPE } from './urls.ts';

/** The paths this edge serves (as express routes them: any case, a trailing slash or not, whatever the query). */
const OAUTH_PATH =
  /^\/(?:\.well-known\/oauth-(?:protected-resource(?:\/mcp)?|authorization-server)|authorize(?:\/consent)?|token|register|revoke)\/?(?:\?|$)/i;
const isRegistration = (url: string) => /^\/register\/?(?:\?|$)/i.test(url);

/** Bodies here are a handful of short fields: a form (authorize, consent, token, revoke) or a registration. */
const BODY_LIMIT = '16kb';

/** What the OAuth edge needs: the store, clock, verified keys and outbound URL policy, whether rate limits are on, and the public origin once the server listens. */
export type OAuthServices = Pick<Services, 'store' | 'clock' | 'changes' | 'webhookPolicy'> & {
  rateLimiter: Pick<RateLimiter, 'enabled'>;
  readonly publicOrigin?: string;
};

/** The OAuth edge, and what it holds open (the metadata documents' connections) until the server closes. */
export interface OAuthEdge extends Edge {
  close(): Promise<void>;
}

export interface OAuthEdgeSettings {
  /** Browser origins whose pages may register a client (OAUTH_REGISTRATION_ALLOWED_ORIGINS); none by default: /register answers no CORS header. */
  registrationAllowedOrigins: readonly string[];
}

/**
 * OAuth 2.1 for MCP assistants: the service as the protected resource of its MCP endpoint and as
 * its own authorization server, at the root of the public origin (services.publicOrigin):
 * - /.well-known/oauth-protected-resource/mcp, and the same at /.well-known/oauth-protected-resource
 *   (RFC 9728), which /mcp's 401 points to (its WWW-Authenticate challenge, challengeParams);
 * - /.well-known/oauth-authorization-server (RFC 8414), /authorize, /token, /register (RFC 7591),
 *   /revoke (RFC 7009): the MCP SDK's mcpAuthRouter over our provider (OAuthProvider), client store
 *   (OAuthClients: registered clients and client metadata documents) and consent (consentHandler).
 *
 * Built on its first request: the public origin is known once the server listens (PORT=0).
 */
export function createOAuthEdge(
  services: OAuthServices,
  log: Logger,
  settings: OAuthEdgeSettings = { registrationAllowedOrigins: [] },
): OAuthEdge {
  const documents = new ClientMetadataDocuments(services.webhookPolicy ?? { allowInsecure: false });
  const limits = new OAuthAddressLimits(services.rateLimiter.enabled);
  let app: Express | undefined;
  return {
    takes: (req: IncomingMessage) => OAUTH_PATH.test(req.url ?? ''),
    handle: (req, res, locals) => {
      const refused = limits.take(locals.clientAddress, isRegistration(req.url ?? ''));
      if (refused) {
        noteError(res, refused);
        noteRefusal(res);
        res.writeHead(429, { ...refused.headers, 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
        return void res.end(JSON.stringify(new TooManyRequestsError(refused.message).toResponseObject()));
      }
      app ??= oauthApp(services, documents, log, settings);
      const served = app;
      // The per-address caps of registered clients and pending requests count by it (requestAddress).
      withRequestAddress(locals.clientAddress, () => void served(req, res));
    },
    close: () => documents.close(),
  };
}

function oauthApp(services: OAuthServices, documents: ClientMetadataDocuments, log: Logger, settings: OAuthEdgeSettings): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  const origin = services.publicOrigin;
  if (origin === undefined) {
    // Not listening (a service built without a server): nothing to advertise.
    app.use(nothingHere(log));
    return app;
  }
  const now = () => services.clock.now().getTime();
  const keys = services.changes.keys;
  const clients = new OAuthClients(services.store, documents, now);
  const provider = new OAuthProvider({ store: services.store, clients, keys, now, origin });
  const issuer = issuerUrl(origin);

  // Parsed here with tight limits; the SDK's own parsers then find the body read and leave it.
  app.use(['/authorize', '/token', '/revoke'], express.urlencoded({ extended: false, limit: BODY_LIMIT, parameterLimit: 50 }));
  app.use('/register', registrationCors(settings.registrationAllowedOrigins));
  app.use('/register', express.json({ limit: BODY_LIMIT }));
  app.use('/authorize', issuerOnRedirects(issuer.href));
  app.use('/authorize', authorizeGate(clients));

  // The SDK's metadata, with what this server does beyond it: every client is public (OAuthClients),
  // client ids may be metadata documents, and authorization responses carry `iss` (RFC 9207).
  const metadata: OAuthMetadata = {
    ...createOAuthMetadata({ provider, issuerUrl: issuer, scopesSupported: [OAUTH_SCOPE] }),
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
  };
  const resource: OAuthProtectedResourceMetadata = {
    resource: mcpResource(origin),
    authorization_servers: [metadata.issuer],
    scopes_supported: [OAUTH_SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: 'event-feed (MCP)',
  };
  app.use('/.well-known/oauth-authorization-server', metadataHandler(metadata));
  app.use(['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'], metadataHandler(resource));
  // Before the router: it mounts /authorize as a prefix, which would take /authorize/consent too.
  app.post('/authorize/consent', consentHandler({ store: services.store, clients, keys, now, origin }));
  app.use(
    mcpAuthRouter({
      provider,
      issuerUrl: issuer,
      resourceServerUrl: new URL(mcpResource(origin)),
      scopesSupported: [OAUTH_SCOPE],
      resourceName: resource.resource_name,
      // The SDK's limiters count by req.ip: replaced by OAuthAddressLimits.
      authorizationOptions: { rateLimit: false },
      tokenOptions: { rateLimit: false },
      clientRegistrationOptions: { rateLimit: false },
      revocationOptions: { rateLimit: false },
    }),
  );
  app.use(notFound);
  app.use(oauthErrorHandler(log));
  return app;
}

/**
 * Every authorization response carries the issuer (RFC 9207 §2), which the metadata promises
 * (`authorization_response_iss_parameter_supported`): consentHandler adds it to its own; this adds it to
 * the error redirects the SDK's authorize handler makes itself (an invalid request after the client
 * and redirect URI were checked), which go only to a verified redirect URI (keepErrorRedirectsVerified).
 */
function issuerOnRedirects(issuer: string) {
  return (_req: Request, res: Response, next: NextFunction) => {
    const redirect = res.redirect.bind(res) as (status: number, url: string) => void;
    res.redirect = ((statusOrUrl: number | string, maybeUrl?: string) => {
      const [status, asked] = typeof statusOrUrl === 'number' ? [statusOrUrl, maybeUrl!] : [302, statusOrUrl];
      const url = keepErrorRedirectsVerified(res, asked);
      if (url === undefined) return;
      const target = new URL(url);
      if (!target.searchParams.has('iss')) target.searchParams.set('iss', issuer);
      redirect(status, target.href);
    }) as Response['redirect'];
    next();
  };
}

/**
 * /register answers CORS only to the origins an operator listed (OAUTH_REGISTRATION_ALLOWED_ORIGINS):
 * the SDK's handler answers `Access-Control-Allow-Origin: *`, which let any page make its visitors'
 * browsers register clients (and fill the caps). Its CORS headers are dropped; a listed origin gets
 * its own back (with `Vary: Origin`). Without CORS a page cannot send the JSON a registration is
 * (a preflight is needed, and fails), and a body of another type is not read.
 */
function registrationCors(allowed: readonly string[]) {
  const listed = new Set(allowed);
  return (req: Request, res: Response, next: NextFunction) => {
    const setHeader = res.setHeader.bind(res);
    res.setHeader = ((name: string, value: number | string | readonly string[]) =>
      /^access-control-/i.test(name) ? res : setHeader(name, value)) as Response['setHeader'];
    res.vary('Origin');
    const origin = req.headers.origin;
    if (origin !== undefined && listed.has(normalizedOrigin(origin) ?? '')) {
      setHeader('Access-Control-Allow-Origin', origin);
      if (req.method === 'OPTIONS') {
        setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
        setHeader('Access-Control-Allow-Headers', 'Content-Type');
        setHeader('Access-Control-Max-Age', '600');
      }
    }
    next();
  };
}

function notFound(req: Request, res: Response): void {
  res.status(404).json({ error: 'not_found', error_description: `nothing at ${req.method} ${req.path.slice(0, 100)}` });
}

/** What reaches here was not answered by a handler: a body that could not be read (the client's), or our failure. */
function oauthErrorHandler(log: Logger) {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const tooLarge = (err as { type?: string }).type === 'entity.too.large';
      res
        .status(tooLarge ? 413 : 400)
        .json({ error: 'invalid_request', error_description: tooLarge ? `the body is over ${BODY_LIMIT}` : 'the body could not be read' });
      return;
    }
    noteError(res, err);
    log.error({ ...safeErrorFields(err), request_id: String(res.locals.requestId) }, 'OAuth request failed');
    if (res.headersSent) return void res.end();
    res
      .status(500)
      .json({ error: 'server_error', error_description: `internal error; quote request id ${String(res.locals.requestId)} to support` });
  };
}
