/*
 * Where the OAuth pieces live, all derived from the public origin (PUBLIC_URL, loadConfig): the
 * service is both the protected resource (its MCP endpoint) and its own authorization server.
 */

/** The one scope: what an assistant may do with a token (the key's `read`, nothing more). */
export const OAUTH_SCOPE = 'read';

/** This deployment's MCP endpoint as an OAuth resource (RFC 8707 §2, RFC 9728): what every token is issued for. */
export const mcpResource = (origin: string) => `${origin}/mcp`;

/** Its protected resource metadata (RFC 9728 §3.1: the well-known suffix inserted before the resource's path). */
export const resourceMetadataUrl = (origin: string) => `${origin}/.well-known/oauth-protected-resource/mcp`;

/** The authorization server's issuer: the public origin, as the MCP SDK's router spells it (URL.href, with its final slash). */
export const issuerUrl = (origin: string) => new URL(`${origin}/`);

/**
 * The parameters a 401 from /mcp adds to its `WWW-Authenticate: Bearer` challenge so that an
 * assistant finds the authorization server (RFC 9728 §5.1) and the scope to ask for (RFC 6750 §3).
 */
export const challengeParams = (origin: string) => `resource_metadata="${resourceMetadataUrl(origin)}", scope="${OAUTH_SCOPE}"`;

/**
 * A `resource` parameter (RFC 8707) in the form stored and compared: this deployment's MCP resource
 * when it names it (scheme and host in any case, the default port written or not, a trailing
 * slash or not), undefined for anything else (another path, another host, a query or fragment).
 */
export function canonicalResource(raw: string, origin: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.search || url.hash || url.username || url.password) return undefined;
  if (url.origin !== origin) return undefined;
  return url.pathname === '/mcp' || url.pathname === '/mcp/' ? mcpResource(origin) : undefined;
}
