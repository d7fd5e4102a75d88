import { createHash, randomBytes } from 'node:crypto';

/*
 * What the OAuth authorization server (src/oauth/) hands out, and how each is recognised before
 * any lookup. All are opaque random strings, stored only as SHA-256 hashes (oauth_grants):
 * - access token `efo_<43>`: presented to /mcp, for an hour at most;
 * - refresh token `efr_<grant id>_<43>`: names its grant, so that a refresh token presented
 *   again after it was rotated is recognised as its grant's, whose tokens are then all revoked;
 * - authorization code `efc_<43>`: single use, a minute at most.
 * Each starts differently from an API key (`efk_`), so a bearer token says which it is.
 */

const SECRET = '[A-Za-z0-9_-]{43}';
const ACCESS_TOKEN = new RegExp(`^efo_${SECRET}$`);
const REFRESH_TOKEN = new RegExp(`^efr_(grt_[A-Za-z0-9_-]{22})_(${SECRET})$`);
const CODE = new RegExp(`^efc_${SECRET}$`);

/** 32 random bytes, base64url: 43 characters. */
const secret = () => randomBytes(32).toString('base64url');

export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

export const newGrantId = () => `grt_${randomBytes(16).toString('base64url')}`;
export const newAccessToken = () => `efo_${secret()}`;
export const newRefreshToken = (grantId: string) => `efr_${grantId}_${secret()}`;
export const newAuthorizationCode = () => `efc_${secret()}`;
/** A random handle (a pending request's, a browser's cookie): as unguessable as a token. */
export const newHandle = secret;

export const isAccessToken = (token: string) => ACCESS_TOKEN.test(token);
export const isAuthorizationCode = (code: string) => CODE.test(code);

/** The grant a well-formed refresh token names, or undefined. */
export function refreshTokenGrant(token: string): string | undefined {
  return REFRESH_TOKEN.exec(token)?.[1];
}
