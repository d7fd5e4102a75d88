import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { redirectUriMatches } from '@modelcontextprotocol/sdk/server/auth/handlers/authorize.js';
import type { NextFunction, Request, Response } from 'express';
import { errorPage, newNonce, sendPage } from './consent-page.ts';
import { OAuthClients } from './clients.ts';
import { isDocumentClientId } from './client-metadata-documents.ts';
import { MAX_STATE_LENGTH } from './limits.ts';

/** The longest error_description an error redirect carries: a sentence, never a validation dump. */
const MAX_DESCRIPTION = 200;

/** Where an authorization request's errors may be sent, once its client and redirect URI are established. */
interface Established {
  /** A redirect URI that was verified: error redirects go there; undefined, they are shown here instead. */
  verifiedRedirect: string | undefined;
}

const established = (res: Response) => res.locals.authorizeRequest as Established | undefined;

/**
 * Runs before the SDK's authorize handler (mcpAuthRouter), so that /authorize never sends a browser
 * to an address nobody verified (RFC 9700 §4.11.2): a link on this service's origin that bounced
 * to an attacker's page is what an open redirector is.
 *
 * - Client or redirect URI not established (no or unknown client_id, a redirect_uri not registered,
 *   none given when several are registered, a parameter given twice): a page of our own (400),
 *   never a redirect.
 * - An error after that (a wrong response_type, PKCE missing or not S256, an invalid resource or
 *   state, what OAuthProvider.authorize refuses) is redirected only to a verified redirect URI: one
 *   named by the request and equal to one the client registered, or one of a client metadata
 *   document (published by the client's own host); otherwise it is shown on the page too. Its
 *   error_description is a short sentence (describeError), never the SDK's validation dump.
 *
 * The checks of the rest of the request here mirror the SDK's (which then finds nothing to refuse),
 * with our own words.
 */
export function authorizeGate(clients: OAuthClients) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (req.path !== '/' || (req.method !== 'GET' && req.method !== 'POST')) return next();
    res.setHeader('Cache-Control', 'no-store');
    const params = ((req.method === 'POST' ? req.body : req.query) ?? {}) as Record<string, unknown>;
    const clientId = params.client_id;
    const asked = params.redirect_uri;
    if (typeof clientId !== 'string' || clientId.length === 0)
      return showError(
        res,
        'La demande ne nomme pas d’application (client_id absent ou donné plusieurs fois).',
        INVALID('client_id is required, once'),
      );
    if (asked !== undefined && typeof asked !== 'string')
      return showError(
        res,
        'L’adresse de retour (redirect_uri) est donnée plusieurs fois.',
        INVALID('redirect_uri is given more than once'),
      );
    let client;
    try {
      client = await clients.getClient(clientId);
    } catch (err) {
      if (err instanceof OAuthError)
        return showError(res, 'L’application qui fait la demande n’a pas pu être vérifiée.', {
          code: err.errorCode,
          description: describeError(err.message),
        });
      return next(err);
    }
    if (!client)
      return showError(res, 'L’application qui fait la demande est inconnue de ce service.', {
        code: 'invalid_client',
        description: 'unknown client_id',
      });
    let redirect: string;
    if (asked !== undefined) {
      if (!client.redirect_uris.some((registered) => redirectUriMatches(asked, registered)))
        return showError(
          res,
          'L’adresse de retour demandée n’est pas une de celles que l’application a enregistrées.',
          INVALID('redirect_uri is not one the client registered'),
        );
      redirect = asked;
    } else if (client.redirect_uris.length === 1) redirect = client.redirect_uris[0]!;
    else
      return showError(
        res,
        'L’application a enregistré plusieurs adresses de retour sans dire laquelle utiliser.',
        INVALID('redirect_uri must be given when the client registered several'),
      );

    const verified = isDocumentClientId(clientId) || (asked !== undefined && client.redirect_uris.includes(asked));
    res.locals.authorizeRequest = { verifiedRedirect: verified ? redirect : undefined } satisfies Established;

    const state = typeof params.state === 'string' && params.state.length <= MAX_STATE_LENGTH ? params.state : undefined;
    const problem = requestProblem(params);
    if (problem) return refuse(res, problem.code, problem.description, state);
    // The SDK's handler looks the client up again: it gets this one (a no-store document is fetched once per request).
    OAuthClients.resolving(client, next);
  };
}

/** What the SDK's handler would refuse in the rest of the request, said in a sentence. */
function requestProblem(params: Record<string, unknown>): { code: string; description: string } | undefined {
  const single = (name: string) => params[name] === undefined || typeof params[name] === 'string';
  for (const name of ['response_type', 'code_challenge', 'code_challenge_method', 'scope', 'state', 'resource']) {
    if (!single(name)) return { code: 'invalid_request', description: `${name} is given more than once` };
  }
  if (params.response_type !== 'code') return { code: 'unsupported_response_type', description: 'response_type must be code' };
  if (typeof params.code_challenge !== 'string' || params.code_challenge.length === 0)
    return { code: 'invalid_request', description: 'code_challenge is required (PKCE)' };
  if (params.code_challenge_method !== 'S256') return { code: 'invalid_request', description: 'code_challenge_method must be S256' };
  if (typeof params.state === 'string' && params.state.length > MAX_STATE_LENGTH)
    return { code: 'invalid_request', description: `state is at most ${MAX_STATE_LENGTH} characters` };
  if (typeof params.resource === 'string' && !URL.canParse(params.resource))
    return { code: 'invalid_target', description: 'resource must be an absolute URL' };
  return undefined;
}

/** An error of an established request: redirected when its redirect URI was verified, shown here otherwise. */
function refuse(res: Response, code: string, description: string, state: string | undefined): void {
  const target = established(res)?.verifiedRedirect;
  if (target === undefined)
    return showError(res, 'La demande de l’application est invalide.', { code, description: describeError(description) });
  const url = new URL(target);
  url.searchParams.set('error', code);
  url.searchParams.set('error_description', describeError(description));
  if (state !== undefined) url.searchParams.set('state', state);
  res.redirect(302, url.href);
}

/** A description fit for an address: one line, short, nothing that looks like a dump. */
export function describeError(description: string): string {
  const line = description.split('\n', 1)[0]!.trim();
  const plain = /^[[{]/.test(line) ? 'the authorization request is invalid' : line;
  return plain.length > MAX_DESCRIPTION ? `${plain.slice(0, MAX_DESCRIPTION - 1)}…` : plain;
}

const INVALID = (description: string) => ({ code: 'invalid_request', description });

/** Our page, in French, with the OAuth error and its description for whoever debugs the application. */
function showError(res: Response, message: string, detail: { code: string; description: string }): void {
  const nonce = newNonce();
  sendPage(res, 400, errorPage(nonce, message, detail), nonce);
}

/**
 * The error redirects the SDK's authorize handler makes itself (what OAuthProvider.authorize
 * throws, once authorizeGate let the request through): sent only to a verified redirect URI, with
 * a short description; shown on our page otherwise. Anything else is left as it is.
 */
export function keepErrorRedirectsVerified(res: Response, url: string): string | undefined {
  const request = established(res);
  if (request === undefined) return url;
  const target = new URL(url);
  const code = target.searchParams.get('error');
  if (code === null) return url;
  if (request.verifiedRedirect === undefined) {
    showError(res, 'La demande de l’application est invalide.', {
      code,
      description: describeError(target.searchParams.get('error_description') ?? code),
    });
    return undefined;
  }
  target.searchParams.set('error_description', describeError(target.searchParams.get('error_description') ?? code));
  return target.href;
}
