import {
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  InvalidTokenError,
  TemporarilyUnavailableError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthorizationParams, OAuthServerProvider } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { OAuthClientInformationFull, OAuthTokenRevocationRequest, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Response } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { principalOfKey } from '../auth/api-keys.ts';
import { isAccessToken, isAuthorizationCode, newAccessToken, newRefreshToken, refreshTokenGrant, sha256Hex } from './tokens.ts';
import type { VerifiedKeys } from '../auth/verified-keys.ts';
import type { OAuthGrantRow, OAuthTokenHashes, Store } from '../store/port.ts';
import type { OAuthClients } from './clients.ts';
import { beginConsent } from './consent.ts';
import { ACCESS_TOKEN_TTL_MS, MAX_PENDING_REQUESTS_PER_ADDRESS, MAX_STATE_LENGTH, REFRESH_TOKEN_TTL_MS, REQUEST_TTL_MS } from './limits.ts';
import { canonicalResource, issuerUrl, mcpResource, OAUTH_SCOPE } from './urls.ts';

/** What the provider works with: the store, the clients, this process's verified keys, its clock and public origin. */
export interface ProviderDeps {
  store: Store;
  clients: OAuthClients;
  keys: VerifiedKeys | undefined;
  now: () => number;
  origin: string;
}

/** A PKCE S256 challenge: BASE64URL(SHA-256(verifier)), 43 characters (RFC 7636 §4.2). */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

const sameHash = (a: string, b: string | null) => b !== null && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/**
 * The authorization server's rules, behind the MCP SDK's handlers (mcpAuthRouter, createOAuthEdge),
 * which parse and validate each request (client, registered redirect URI, PKCE S256, the verifier
 * against the challenge) before calling here. Here: the consent (beginConsent), and grants over the
 * store: a code spent once within a minute, an access token for an hour, a refresh token that
 * rotates, all stored hashed, all for this deployment's MCP resource only (RFC 8707), and none
 * issued or refreshed once their API key is revoked. A code or refresh token presented a second
 * time revokes its whole grant (OAuth 2.1 §4.1.2 and §4.3.1: it was stolen, or the client is
 * confused; either way nothing of it should work).
 */
export class OAuthProvider implements OAuthServerProvider {
  constructor(private readonly deps: ProviderDeps) {}

  get clientsStore(): OAuthClients {
    return this.deps.clients;
  }

  /** After the SDK checked the client, its redirect URI and PKCE: the request waits for the person's consent (beginConsent). */
  async authorize(client: OAuthClientInformationFull, params: AuthorizationParams, res: Response): Promise<void> {
    const { store, now, origin } = this.deps;
    const resource = this.#resource(params.resource?.href);
    if (!S256_CHALLENGE.test(params.codeChallenge))
      throw new InvalidRequestError('code_challenge must be an S256 challenge: 43 base64url characters');
    if (params.state !== undefined && params.state.length > MAX_STATE_LENGTH)
      throw new InvalidRequestError(`state is at most ${MAX_STATE_LENGTH} characters`);
    // Whatever was asked, the one scope there is (an unknown scope, such as offline_access, is not granted: RFC 6749 §3.3).
    const request = res.req;
    const given =
      (request.method === 'POST' ? (request.body as Record<string, unknown> | undefined)?.redirect_uri : request.query.redirect_uri) !==
      undefined;
    const started = await beginConsent(res, { store, now: now(), origin }, client, {
      client_id: client.client_id,
      redirect_uri: params.redirectUri,
      redirect_uri_given: given ? 1 : 0,
      code_challenge: params.codeChallenge,
      state: params.state ?? null,
      scope: OAUTH_SCOPE,
      resource,
    });
    if (started === 'address_full')
      throw new TemporarilyUnavailableError(
        `${MAX_PENDING_REQUESTS_PER_ADDRESS} authorization requests from this address are waiting for consent; each expires ${REQUEST_TTL_MS / 60_000} minutes after it was made`,
      );
    if (started === 'full')
      throw new TemporarilyUnavailableError('too many authorization requests are waiting right now; try again in a few minutes');
  }

  async challengeForAuthorizationCode(client: OAuthClientInformationFull, code: string): Promise<string> {
    return (await this.#codeGrant(client, code)).code_challenge;
  }

  /** The SDK has checked the verifier against the challenge (challengeForAuthorizationCode): the code is spent now, once. */
  async exchangeAuthorizationCode(
    client: OAuthClientInformationFull,
    code: string,
    _verifier?: string,
    redirectUri?: string,
    resource?: URL,
  ): Promise<OAuthTokens> {
    const { store, now } = this.deps;
    const grant = await this.#codeGrant(client, code);
    // RFC 6749 §4.1.3: the same redirect_uri as in the authorization request, when it named one.
    if (redirectUri !== undefined ? redirectUri !== grant.redirect_uri : grant.redirect_uri_given === 1) {
      throw new InvalidGrantError('redirect_uri is not the one of the authorization request');
    }
    this.#checkResource(resource, grant);
    await this.#checkKey(grant);
    const tokens = this.#newTokens(grant.id);
    if (!(await store.oauth.redeemCode(sha256Hex(code), now(), tokens.hashes))) {
      // Spent (by a concurrent exchange of the same code) or expired since the lookup: nothing of it may work.
      await store.oauth.revokeGrant(grant.id, now());
      throw new InvalidGrantError('authorization code already used or expired: the tokens issued for it are revoked');
    }
    return tokens.response;
  }

  async exchangeRefreshToken(
    client: OAuthClientInformationFull,
    refreshToken: string,
    scopes?: string[],
    resource?: URL,
  ): Promise<OAuthTokens> {
    const { store, now } = this.deps;
    const grantId = refreshTokenGrant(refreshToken);
    const grant = grantId === undefined ? undefined : await store.oauth.grant(grantId);
    if (!grant || grant.client_id !== client.client_id) throw new InvalidGrantError('invalid refresh token');
    this.#checkIssuer(grant);
    if (grant.revoked_at !== null) throw new InvalidGrantError('this authorization was revoked: authorize again');
    const presented = sha256Hex(refreshToken);
    if (!sameHash(presented, grant.refresh_sha256)) {
      // A refresh token of this grant, but not its latest: one already exchanged (rotation), presented again.
      await store.oauth.revokeGrant(grant.id, now());
      throw new InvalidGrantError('refresh token already used: every token of this authorization is revoked; authorize again');
    }
    if (grant.refresh_expires_at === null || grant.refresh_expires_at <= now())
      throw new InvalidGrantError('refresh token expired: authorize again');
    if (scopes && scopes.some((scope) => !grant.scope.split(' ').includes(scope)))
      throw new InvalidScopeError(`the only scope granted is "${grant.scope}"`);
    this.#checkResource(resource, grant);
    await this.#checkKey(grant);
    const tokens = this.#newTokens(grant.id);
    if (!(await store.oauth.rotateTokens(grant.id, presented, now(), tokens.hashes))) {
      await store.oauth.revokeGrant(grant.id, now());
      throw new InvalidGrantError('refresh token already used: every token of this authorization is revoked; authorize again');
    }
    return tokens.response;
  }

  /** Not what the edges use (they call principalOfAccessToken with the request's resource); the SDK's interface asks for it. */
  async verifyAccessToken(token: string): Promise<AuthInfo> {
    const grant = isAccessToken(token) ? await this.deps.store.oauth.grantByAccessToken(sha256Hex(token)) : undefined;
    if (!grant || grant.revoked_at !== null || grant.access_expires_at === null || grant.access_expires_at <= this.deps.now())
      throw new InvalidTokenError('invalid, expired or revoked access token');
    if (!(await principalOfKey(this.deps.store, grant.key_id, this.deps.keys)))
      throw new InvalidTokenError('the API key behind this token was revoked');
    return {
      token,
      clientId: grant.client_id,
      scopes: grant.scope.split(' '),
      expiresAt: Math.floor(grant.access_expires_at / 1000),
      resource: new URL(grant.resource),
    };
  }

  /**
   * RFC 7009: an access token or the current refresh token of one of this client's grants revokes
   * the whole grant (both tokens: §2.1 lets revoking either end the grant). Anything else, another
   * client's token included, changes nothing, and is answered as a success all the same (§2.2).
   */
  async revokeToken(client: OAuthClientInformationFull, request: OAuthTokenRevocationRequest): Promise<void> {
    const { store, now } = this.deps;
    const hash = sha256Hex(request.token);
    let grant: OAuthGrantRow | undefined;
    if (isAccessToken(request.token)) grant = await store.oauth.grantByAccessToken(hash);
    else {
      const grantId = refreshTokenGrant(request.token);
      const found = grantId === undefined ? undefined : await store.oauth.grant(grantId);
      if (found && sameHash(hash, found.refresh_sha256)) grant = found;
    }
    if (grant && grant.client_id === client.client_id) await store.oauth.revokeGrant(grant.id, now());
  }

  /** A `resource` parameter (RFC 8707) as stored: this deployment's MCP endpoint, the default when none is given; invalid_target otherwise. */
  #resource(raw: string | undefined): string {
    if (raw === undefined) return mcpResource(this.deps.origin);
    const resource = canonicalResource(raw, this.deps.origin);
    if (!resource) throw new InvalidTargetError(`resource must be this server's MCP endpoint, ${mcpResource(this.deps.origin)}`);
    return resource;
  }

  #checkResource(resource: URL | undefined, grant: OAuthGrantRow): void {
    if (resource !== undefined && canonicalResource(resource.href, this.deps.origin) !== grant.resource) {
      throw new InvalidTargetError(`this authorization is for ${grant.resource} only`);
    }
  }

  /**
   * A code or refresh token is redeemed only by the authorization server that issued it (RFC 6749
   * §10.5, RFC 9700 §4.4): another deployment on the same database (another PUBLIC_URL) answers
   * invalid_grant, and leaves the grant alone (its own server may still redeem it).
   */
  #checkIssuer(grant: OAuthGrantRow): void {
    if (grant.issuer !== null && grant.issuer !== issuerUrl(this.deps.origin).href)
      throw new InvalidGrantError('this authorization was issued by another authorization server');
  }

  /** Nothing is issued for a key revoked since the person consented; its grant goes with it. */
  async #checkKey(grant: OAuthGrantRow): Promise<void> {
    const key = await principalOfKey(this.deps.store, grant.key_id, this.deps.keys);
    if (key?.permissions.has('read')) return;
    await this.deps.store.oauth.revokeGrant(grant.id, this.deps.now());
    throw new InvalidGrantError('the API key this authorization was given with is revoked: authorize again with another key');
  }

  /** The live grant of an unspent, unexpired code of this client; a spent one revokes its grant. */
  async #codeGrant(client: OAuthClientInformationFull, code: string): Promise<OAuthGrantRow> {
    const { store, now } = this.deps;
    const grant = isAuthorizationCode(code) ? await store.oauth.grantByCode(sha256Hex(code)) : undefined;
    if (!grant || grant.client_id !== client.client_id || grant.revoked_at !== null)
      throw new InvalidGrantError('invalid authorization code');
    this.#checkIssuer(grant);
    if (grant.code_used_at !== null) {
      await store.oauth.revokeGrant(grant.id, now());
      throw new InvalidGrantError('authorization code already used: the tokens issued for it are revoked');
    }
    if (grant.code_expires_at <= now()) throw new InvalidGrantError('authorization code expired');
    return grant;
  }

  #newTokens(grantId: string): { hashes: OAuthTokenHashes; response: OAuthTokens } {
    const now = this.deps.now();
    const access = newAccessToken();
    const refresh = newRefreshToken(grantId);
    return {
      hashes: {
        access_sha256: sha256Hex(access),
        access_expires_at: now + ACCESS_TOKEN_TTL_MS,
        refresh_sha256: sha256Hex(refresh),
        refresh_expires_at: now + REFRESH_TOKEN_TTL_MS,
      },
      response: {
        access_token: access,
        token_type: 'Bearer',
        expires_in: ACCESS_TOKEN_TTL_MS / 1000,
        refresh_token: refresh,
        scope: OAUTH_SCOPE,
      },
    };
  }
}
