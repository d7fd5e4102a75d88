import type { KeyStore, OAuthStore } from '../store/port.ts';
import { principalOfKey } from '../auth/api-keys.ts';
import { isAccessToken, sha256Hex } from './tokens.ts';
import type { Principal } from '../auth/principal.ts';
import type { VerifiedKeys } from '../auth/verified-keys.ts';

export interface AccessCheck {
  /** The resource (RFC 8707) the request is for: the token must have been issued for exactly this one. */
  resource: string;
  /** Now, in ms, by the service's clock. */
  now: number;
  /** The service's verified keys (VerifiedKeys). */
  keys?: VerifiedKeys;
}

/**
 * The principal an OAuth access token (newAccessToken) acts as, or undefined when it is not
 * one, unknown, expired, revoked, issued for another resource, or its key was revoked.
 *
 * The token carries at most its key's rights: the key's workspace and mailbox restriction, and
 * only those of its permissions the grant's scopes name (`read`). The key is checked on every
 * request through the same verified keys an API key goes through (principalOfKey), so a key
 * revoked on any instance stops its tokens within the time revoke_key promises for the key
 * itself; the grant is read on every request (one indexed lookup), so a token revoked through
 * the revocation endpoint, or a family revoked for a reused refresh token, stops at once too.
 * The principal's key id is the key's: rate limits apply as for the key.
 */
export async function principalOfAccessToken(
  store: OAuthStore & KeyStore,
  token: string,
  check: AccessCheck,
): Promise<Principal | undefined> {
  if (!isAccessToken(token)) return undefined;
  const grant = await store.oauth.grantByAccessToken(sha256Hex(token));
  if (!grant || grant.revoked_at !== null || grant.access_expires_at === null || grant.access_expires_at <= check.now) return undefined;
  if (grant.resource !== check.resource) return undefined;
  const key = await principalOfKey(store, grant.key_id, check.keys);
  if (!key) return undefined;
  const scopes = new Set(grant.scope.split(' '));
  return {
    keyId: key.keyId,
    workspaceId: key.workspaceId,
    permissions: new Set([...key.permissions].filter((permission) => scopes.has(permission))),
    mailboxes: key.mailboxes,
  };
}
