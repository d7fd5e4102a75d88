import { authenticate } from '../auth/api-keys.ts';
import { principalOfAccessToken } from '../auth/oauth-access.ts';
import { isAccessToken } from '../auth/oauth-tokens.ts';
import type { Principal } from '../auth/principal.ts';
import { unauthorized } from '../errors.ts';
import { KnownTokens } from '../limits/known-tokens.ts';
import type { RateState } from '../limits/rate-limiter.ts';
import type { AppServices } from '../operations/context.ts';

/**
 * Who is calling, for every edge (HTTP `/v1`, MCP): `token` is the bearer token (or undefined when
 * the header is missing or malformed: edge/bearer.ts), `address` the client's (client-address.ts).
 * Then one token of the key's rate budget (429 rate_limited when it is empty).
 *
 * No request goes unpaid. One whose token authenticated lately (RateLimiter.knownTokens) is paid
 * by its key. Any other is paid by its address before its key is looked up (429 when the address
 * has nothing left): a token taken, given back if the key proves valid, kept if not. So a flood
 * of unknown keys costs at most the address's rate in lookups, and a valid key sharing that
 * address is not refused for it once it has authenticated.
 */
export async function authenticateBearer(
  services: AppServices,
  token: string | undefined,
  address: string,
  identified?: (principal: Principal) => void,
): Promise<{ principal: Principal; rate: RateState | undefined }> {
  const principal = await identifyBearer(services, token, address);
  // Known before its token is taken: a request its key's rate refuses is still logged as that key's.
  identified?.(principal);
  return { principal, rate: services.rateLimiter.take(principal.keyId) };
}

/**
 * authenticateBearer without the key's own token: for an edge that takes it per message itself
 * (MCP, where a tools/call over the limit is answered as a tool error the model can read).
 * A database failure here is ours (500), not the caller's (401).
 *
 * `oauthResource`: where OAuth access tokens are taken (MCP), the resource (RFC 8707) this request
 * is for, which a token must have been issued for; absent (`/v1`), only API keys are.
 */
export async function identifyBearer(services: AppServices, token: string | undefined, address: string, oauthResource?: string): Promise<Principal> {
  const { rateLimiter } = services;
  if (!rateLimiter.enabled) {
    const found = token === undefined ? undefined : await bearerPrincipal(services, token, oauthResource);
    if (!found?.principal) throw unauthorized(found?.refusal);
    return found.principal;
  }
  const digest = token === undefined ? undefined : KnownTokens.digest(token);
  const known = digest !== undefined && rateLimiter.knownTokens.has(digest);
  if (!known) rateLimiter.takeForAddress(address);
  let found: Found | undefined;
  try {
    found = token === undefined ? undefined : await bearerPrincipal(services, token, oauthResource);
  } catch (err) {
    // Our failure (the database), not the client's: its address does not pay for it.
    if (!known) rateLimiter.chargeAddress(address, -1);
    throw err;
  }
  if (!found?.principal) {
    if (known) {
      // Revoked since: from now on this token is looked up only if its address can pay.
      rateLimiter.knownTokens.forget(digest);
      rateLimiter.chargeAddress(address, 1);
    }
    throw unauthorized(found?.refusal);
  }
  if (!known) rateLimiter.chargeAddress(address, -1);
  rateLimiter.knownTokens.remember(digest!);
  return found.principal;
}

/** Who a bearer token is, or why it is refused (undefined: the default "missing or invalid API key"). */
interface Found {
  principal?: Principal;
  refusal?: string;
}

/** An API key anywhere; an OAuth access token (auth/oauth-access.ts) only where `oauthResource` says one is taken. */
async function bearerPrincipal({ store, changes, clock }: AppServices, token: string, oauthResource: string | undefined): Promise<Found> {
  if (!isAccessToken(token)) return { principal: await authenticate(store, token, changes.keys) };
  if (oauthResource === undefined) return { refusal: 'an OAuth access token is only valid for MCP (/mcp): this endpoint takes an API key' };
  const principal = await principalOfAccessToken(store, token, { resource: oauthResource, now: clock.now().getTime(), keys: changes.keys });
  return principal ? { principal } : { refusal: 'invalid, expired or revoked OAuth access token' };
}
