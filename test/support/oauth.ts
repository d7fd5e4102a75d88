/**
 * An assistant's side of OAuth against the service, raw over HTTP (no browser): register, open
 * the authorization URL, post the consent form as a browser would, exchange the code. The browser
 * test (test/oauth-browser.test.ts) does the consent in Chromium instead; these helpers let the
 * other tests reach every refusal quickly.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** A response read once: its status, headers, text and the JSON it holds (undefined when it is not JSON). */
export async function answer(response: Response): Promise<Answer> {
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** POST of form fields (what /token, /revoke and the consent page take). */
export async function postForm(
  url: string,
  fields: Record<string, string | undefined>,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const body = new URLSearchParams(Object.entries(fields).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return answer(
    await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body,
      redirect: 'manual',
    }),
  );
}

/** Dynamic client registration (RFC 7591). */
export async function register(base: string, metadata: Record<string, unknown>): Promise<Answer> {
  return answer(
    await fetch(`${base}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) }),
  );
}

export async function registeredClient(
  base: string,
  redirectUri = 'http://127.0.0.1:7777/callback',
  name = 'Assistant de test',
): Promise<string> {
  const registered = await register(base, { redirect_uris: [redirectUri], client_name: name, token_endpoint_auth_method: 'none' });
  assert.equal(registered.status, 201, registered.text);
  return registered.json.client_id;
}

export interface AuthorizationRequest {
  clientId: string;
  redirectUri?: string;
  challenge: string;
  state?: string;
  resource?: string;
  scope?: string;
}

/** The authorization URL an assistant opens (resource: this server's /mcp unless told otherwise, or left out with null). */
export function authorizationUrl(base: string, request: AuthorizationRequest): string {
  const url = new URL(`${base}/authorize`);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', request.clientId);
  if (request.redirectUri) url.searchParams.set('redirect_uri', request.redirectUri);
  url.searchParams.set('code_challenge', request.challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  if (request.state !== undefined) url.searchParams.set('state', request.state);
  if (request.resource !== undefined) url.searchParams.set('resource', request.resource);
  if (request.scope !== undefined) url.searchParams.set('scope', request.scope);
  return url.href;
}

/** The consent page's first step as a browser gets it: its hidden handle and the browser cookie set with it. */
export interface ConsentStart extends Answer {
  handle: string | undefined;
  cookie: string | undefined;
}

export async function openConsent(url: string, cookie?: string): Promise<ConsentStart> {
  const got = await answer(await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} }));
  const setCookie = got.headers.get('set-cookie');
  return {
    ...got,
    handle: /name="request" value="([^"]+)"/.exec(got.text)?.[1],
    cookie: setCookie ? setCookie.split(';')[0] : cookie,
  };
}

/** One post of the consent form, as the page's own form sends it (same origin). */
export function postConsent(base: string, start: { handle?: string; cookie?: string }, fields: Record<string, string>): Promise<Answer> {
  return postForm(
    `${base}/authorize/consent`,
    { request: start.handle, ...fields },
    { ...(start.cookie ? { cookie: start.cookie } : {}), 'sec-fetch-site': 'same-origin' },
  );
}

/** Where a redirect sends the browser, with its query parameters. */
export function redirectedTo(got: Answer): URL {
  const location = got.headers.get('location');
  assert.ok(location, `a redirect (status ${got.status}): ${got.text.slice(0, 300)}`);
  return new URL(location);
}

/** The whole consent with an API key: the code the redirect carries (and its state and iss). */
export async function consentWithKey(base: string, request: AuthorizationRequest, key: string): Promise<URL> {
  const start = await openConsent(authorizationUrl(base, request));
  assert.equal(start.status, 200, start.text.slice(0, 500));
  const checked = await postConsent(base, start, { action: 'check', api_key: key });
  assert.equal(checked.status, 200, checked.text.slice(0, 500));
  const allowed = await postConsent(base, start, { action: 'allow' });
  assert.equal(allowed.status, 303, allowed.text.slice(0, 500));
  return redirectedTo(allowed);
}

export function exchangeCode(
  base: string,
  fields: { clientId: string; code: string; verifier: string; redirectUri?: string; resource?: string },
): Promise<Answer> {
  return postForm(`${base}/token`, {
    grant_type: 'authorization_code',
    client_id: fields.clientId,
    code: fields.code,
    code_verifier: fields.verifier,
    redirect_uri: fields.redirectUri,
    resource: fields.resource,
  });
}

export function refresh(
  base: string,
  fields: { clientId: string; refreshToken: string; resource?: string; scope?: string },
): Promise<Answer> {
  return postForm(`${base}/token`, {
    grant_type: 'refresh_token',
    client_id: fields.clientId,
    refresh_token: fields.refreshToken,
    resource: fields.resource,
    scope: fields.scope,
  });
}

export interface Tokens {
  clientId: string;
  access: string;
  refresh: string;
  response: any;
}

/**
 * Registration, consent with `key`, and the code exchanged: an assistant's tokens, for the /mcp of
 * `origin` (the service's public origin: its own address unless PUBLIC_URL says otherwise).
 */
export async function tokensFor(
  base: string,
  key: string,
  options: { clientId?: string; redirectUri?: string; origin?: string } = {},
): Promise<Tokens> {
  const redirectUri = options.redirectUri ?? 'http://127.0.0.1:7777/callback';
  const clientId = options.clientId ?? (await registeredClient(base, redirectUri));
  const resource = `${options.origin ?? base}/mcp`;
  const { verifier, challenge } = pkce();
  const back = await consentWithKey(base, { clientId, redirectUri, challenge, state: 'st', resource }, key);
  const code = back.searchParams.get('code');
  assert.ok(code, back.href);
  const exchanged = await exchangeCode(base, { clientId, code, verifier, redirectUri, resource });
  assert.equal(exchanged.status, 200, exchanged.text);
  return { clientId, access: exchanged.json.access_token, refresh: exchanged.json.refresh_token, response: exchanged.json };
}

/** A raw MCP tools/call of event_feed with a bearer token: the HTTP status, the challenge, and the events. */
export async function mcpFeed(
  base: string,
  token: string,
  args: Record<string, unknown> = {},
): Promise<{
  status: number;
  challenge: string | null;
  events: Array<{ subject: { refs: { mailbox_id?: string } } }> | undefined;
  body: any;
}> {
  const response = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'event_feed', arguments: args } }),
  });
  const body = (await response.json()) as any;
  return {
    status: response.status,
    challenge: response.headers.get('www-authenticate'),
    events: body?.result?.structuredContent?.events,
    body,
  };
}

/** The OAuth error /authorize's own error page shows (it never redirects a request whose client or redirect URI is not established). */
export function pageError(got: Answer): { error: string | undefined; error_description: string | undefined } {
  assert.match(got.headers.get('content-type') ?? '', /^text\/html/, `an error page: ${got.text.slice(0, 200)}`);
  const found = /id="oauth-error">[^<]*<code>([^<]*)<\/code> : <span>([^<]*)<\/span>/.exec(got.text);
  const unescape = (text: string) =>
    text.replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[name]!);
  return { error: found?.[1], error_description: found?.[2] === undefined ? undefined : unescape(found[2]) };
}
