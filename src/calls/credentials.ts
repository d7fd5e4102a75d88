import { authenticate } from '../auth/api-keys.ts';
import { principalOfAccessToken } from '../oauth/access-tokens.ts';
import { isAccessToken } from '../oauth/tokens.ts';
import type { Principal } from '../auth/principal.ts';
import type { CallServices } from './call-services.ts';

/** Who a bearer token is, or why it is refused (undefined: the default "missing or invalid API key"). */
export interface BearerLookup {
  principal?: Principal;
  refusal?: string;
}

/**
 * Who a bearer token is: an API key anywhere; an OAuth access token (principalOfAccessToken) only
 * where `oauthResource` says one is taken (MCP: the resource, RFC 8707, the request is for, which
 * the token must have been issued for). A token's principal is its key's, checked like an API key
 * (VerifiedKeys), so revoking the key refuses its tokens too.
 */
export async function bearerPrincipal(
  { store, changes, clock }: Pick<CallServices, 'store' | 'changes' | 'clock'>,
  token: string,
  oauthResource: string | undefined,
): Promise<BearerLookup> {
  if (!isAccessToken(token)) return { principal: await authenticate(store, token, changes.keys) };
  if (oauthResource === undefined) return { refusal: 'an OAuth access token is only valid for MCP (/mcp): this endpoint takes an API key' };
  const principal = await principalOfAccessToken(store, token, { resource: oauthResource, now: clock.now().getTime(), keys: changes.keys });
  return principal ? { principal } : { refusal: 'invalid, expired or revoked OAuth access token' };
}
