import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Request, Response } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { authenticate, principalOfKey } from '../auth/api-keys.ts';
import { newAuthorizationCode, newGrantId, newHandle, sha256Hex } from './tokens.ts';
import type { VerifiedKeys } from '../auth/verified-keys.ts';
import type { CappedInsert, OAuthRequestRow, Store } from '../store/port.ts';
import { isDocumentClientId } from './client-metadata-documents.ts';
import type { OAuthClients } from './clients.ts';
import { confirmPage, errorPage, keyPage, newNonce, sendPage, type ConsentView } from './consent-page.ts';
import {
  CODE_TTL_MS,
  KEY_ATTEMPTS,
  MAX_GRANTS_PER_KEY,
  MAX_PENDING_REQUESTS,
  MAX_PENDING_REQUESTS_PER_ADDRESS,
  REQUEST_TTL_MS,
} from './limits.ts';
import { requestAddress } from './request-address.ts';
import { isLoopbackRedirect, redirectTarget } from './redirect-uris.ts';
import { issuerUrl } from './urls.ts';

/*
 * The person's consent, between the assistant's authorization request (GET /authorize, the SDK's
 * handler, then OAuthProvider.authorize) and the code sent back to its redirect URI.
 *
 * The request waits in oauth_requests under the SHA-256 of a random handle, which only the page
 * holds (a hidden field), bound to the browser that opened it by a random cookie (HttpOnly,
 * SameSite=Strict: a form posted from another site carries none), whose hash the row keeps: a
 * consent form is taken only with both, which is the form's protection against cross-site
 * request forgery. The API key the person types travels in the form's body only: it is checked
 * (authenticate, as a bearer key is), never stored (the request keeps the key's id), never
 * put back in a page, a URL or a log line.
 */

const COOKIE = 'ef_oauth_browser';
const COOKIE_VALUE = /^[A-Za-z0-9_-]{43}$/;
const HANDLE = /^[A-Za-z0-9_-]{43}$/;
/** Longer than any API key: anything beyond is refused unread. */
const MAX_KEY_LENGTH = 200;

export interface ConsentDeps {
  store: Store;
  clients: OAuthClients;
  keys: VerifiedKeys | undefined;
  now: () => number;
  origin: string;
}

type PendingFields = Pick<
  OAuthRequestRow,
  'client_id' | 'redirect_uri' | 'redirect_uri_given' | 'code_challenge' | 'state' | 'scope' | 'resource'
>;

const browserCookie = (req: Request) => {
  const value = /(?:^|;\s*)ef_oauth_browser=([^;]*)/.exec(req.headers.cookie ?? '')?.[1];
  return value !== undefined && COOKIE_VALUE.test(value) ? value : undefined;
};

const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

function consentView(client: OAuthClientInformationFull, redirectUri: string, handle: string): ConsentView {
  return {
    clientName: client.client_name,
    documentHost: isDocumentClientId(client.client_id) ? new URL(client.client_id).host : undefined,
    redirectTarget: redirectTarget(redirectUri),
    redirectLoopback: isLoopbackRedirect(redirectUri),
    handle,
  };
}

/** Where the pages' forms may lead: the redirect URI's origin (or its application scheme), for the CSP's form-action. */
function formTargets(redirectUri: string): string[] {
  const url = new URL(redirectUri);
  return [url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : url.protocol];
}

/**
 * Stores the request and shows the first step (the key); `full` when MAX_PENDING_REQUESTS wait
 * already, `address_full` when MAX_PENDING_REQUESTS_PER_ADDRESS of the asking address do. The browser keeps its cookie across requests, so two consents in two tabs both work.
 */
export async function beginConsent(
  res: Response,
  deps: { store: Store; now: number; origin: string },
  client: OAuthClientInformationFull,
  fields: PendingFields,
): Promise<CappedInsert> {
  const existing = browserCookie(res.req);
  const browser = existing ?? newHandle();
  const handle = newHandle();
  const stored = await deps.store.oauth.addRequest(
    {
      ...fields,
      handle_sha256: sha256Hex(handle),
      browser_sha256: sha256Hex(browser),
      key_id: null,
      key_attempts: 0,
      created_at: deps.now,
      expires_at: deps.now + REQUEST_TTL_MS,
      address: requestAddress(),
    },
    { cap: MAX_PENDING_REQUESTS, perAddress: MAX_PENDING_REQUESTS_PER_ADDRESS, now: deps.now },
  );
  if (stored !== 'stored') return stored;
  if (!existing) {
    const secure = deps.origin.startsWith('https:') ? '; Secure' : '';
    res.setHeader('Set-Cookie', `${COOKIE}=${browser}; Path=/authorize; HttpOnly; SameSite=Strict${secure}`);
  }
  const nonce = newNonce();
  sendPage(res, 200, keyPage(nonce, consentView(client, fields.redirect_uri, handle)), nonce, formTargets(fields.redirect_uri));
  return 'stored';
}

/** The authorization response (RFC 6749 §4.1.2), with the issuer (RFC 9207), sent with 303: the form's POST becomes a GET. */
function sendBack(res: Response, row: OAuthRequestRow, origin: string, params: Record<string, string>): void {
  const target = new URL(row.redirect_uri);
  for (const [name, value] of Object.entries(params)) target.searchParams.set(name, value);
  if (row.state !== null) target.searchParams.set('state', row.state);
  target.searchParams.set('iss', issuerUrl(origin).href);
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(303, target.href);
}

/** POST /authorize/consent: the consent form's two steps (`check` the key, then `allow`) and `deny` at either. */
export function consentHandler(deps: ConsentDeps) {
  return async (req: Request, res: Response): Promise<void> => {
    const nonce = newNonce();
    const fail = (status: number, message: string) => sendPage(res, status, errorPage(nonce, message), nonce);
    // Browsers say where a form came from; a cookie-less cross-site post is refused below anyway.
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return fail(403, 'Ce formulaire a été envoyé depuis un autre site.');
    const body = (req.body ?? {}) as Record<string, unknown>;
    const handle = body.request;
    if (typeof handle !== 'string' || !HANDLE.test(handle)) return fail(400, 'Demande d’autorisation inconnue.');
    const handleSha256 = sha256Hex(handle);
    const { store, now } = deps;
    const row = await store.oauth.request(handleSha256);
    if (!row || row.expires_at <= now()) return fail(400, 'Cette demande d’autorisation a expiré ou a déjà reçu une réponse.');
    const browser = browserCookie(req);
    if (browser === undefined || !sameHash(sha256Hex(browser), row.browser_sha256))
      return fail(403, 'Cette demande d’autorisation a été ouverte dans un autre navigateur.');
    const client = await deps.clients.getClient(row.client_id).catch(() => undefined);
    if (!client) {
      await store.oauth.takeRequest(handleSha256);
      return fail(400, 'L’application qui demande l’accès n’est plus reconnue.');
    }
    const view = consentView(client, row.redirect_uri, handle);
    const targets = formTargets(row.redirect_uri);
    const show = (status: number, html: string) => sendPage(res, status, html, nonce, targets);

    switch (body.action) {
      case 'deny':
        if (!(await store.oauth.takeRequest(handleSha256))) return fail(400, 'Cette demande d’autorisation a déjà reçu une réponse.');
        return sendBack(res, row, deps.origin, { error: 'access_denied', error_description: 'the person refused access' });

      case 'check': {
        const key = body.api_key;
        if (row.key_attempts >= KEY_ATTEMPTS) {
          await store.oauth.takeRequest(handleSha256);
          return fail(400, `Trop de clés refusées (${KEY_ATTEMPTS}) pour cette demande.`);
        }
        const principal =
          typeof key === 'string' && key.length <= MAX_KEY_LENGTH ? await authenticate(store, key.trim(), deps.keys) : undefined;
        const refusal = !principal
          ? 'Clé refusée : elle est inconnue, révoquée ou mal recopiée.'
          : !principal.permissions.has('read')
            ? 'Cette clé n’a pas le droit read : donnez une clé qui peut lire le flux.'
            : undefined;
        if (refusal) {
          await store.oauth.updateRequest(handleSha256, { key_attempts: row.key_attempts + 1 });
          return show(400, keyPage(nonce, view, refusal));
        }
        await store.oauth.updateRequest(handleSha256, { key_id: principal!.keyId });
        const workspace = await store.findWorkspace(principal!.workspaceId);
        return show(
          200,
          confirmPage(nonce, view, {
            keyId: principal!.keyId,
            workspaceId: principal!.workspaceId,
            workspaceName: workspace?.name,
            mailboxes: principal!.mailboxes,
          }),
        );
      }

      case 'allow': {
        if (row.key_id === null) return show(400, keyPage(nonce, view, 'Donnez d’abord une clé d’API.'));
        const principal = await principalOfKey(store, row.key_id, deps.keys);
        if (!principal?.permissions.has('read')) {
          await store.oauth.takeRequest(handleSha256);
          return fail(400, 'La clé donnée a été révoquée entre-temps.');
        }
        // Taken once: a second submission of the same form gives no second code.
        if (!(await store.oauth.takeRequest(handleSha256))) return fail(400, 'Cette demande d’autorisation a déjà reçu une réponse.');
        const at = now();
        const code = newAuthorizationCode();
        await store.oauth.addGrant(
          {
            id: newGrantId(),
            client_id: row.client_id,
            key_id: principal.keyId,
            scope: row.scope,
            resource: row.resource,
            created_at: at,
            expires_at: at + CODE_TTL_MS,
            code_sha256: sha256Hex(code),
            code_challenge: row.code_challenge,
            redirect_uri: row.redirect_uri,
            redirect_uri_given: row.redirect_uri_given,
            code_expires_at: at + CODE_TTL_MS,
            code_used_at: null,
            access_sha256: null,
            access_expires_at: null,
            refresh_sha256: null,
            refresh_expires_at: null,
            revoked_at: null,
            issuer: issuerUrl(deps.origin).href,
          },
          { maxPerKey: MAX_GRANTS_PER_KEY, now: at },
        );
        await store.oauth.markClientUsed(row.client_id, at);
        return sendBack(res, row, deps.origin, { code });
      }

      default:
        return show(400, keyPage(nonce, view, 'Choisissez « Vérifier la clé », « Autoriser » ou « Refuser ».'));
    }
  };
}
