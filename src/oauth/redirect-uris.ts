/** The most redirect URIs one client may register, and how long each may be. */
export const MAX_REDIRECT_URIS = 10;
export const MAX_REDIRECT_URI_LENGTH = 1000;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Schemes a browser acts on itself (runs, shows, or reads locally) rather than handing to an
 * application: never a place to send an authorization code.
 */
const BROWSER_SCHEMES = new Set([
  'http:',
  'javascript:',
  'data:',
  'vbscript:',
  'file:',
  'blob:',
  'about:',
  'filesystem:',
  'view-source:',
  'ws:',
  'wss:',
  'ftp:',
]);

/**
 * Why a redirect URI may not be registered, or undefined when it may. The MCP authorization
 * specification wants https or a loopback address (http://localhost, 127.0.0.1, [::1]: a native
 * application listening on this computer, any port: RFC 8252 §7.3, which the SDK's handler
 * applies); OAuth 2.1 for native applications also allows a private-use scheme (RFC 8252 §7.1,
 * `com.example.app:/callback`), which the consent page shows as such. Never a fragment (RFC 6749
 * §3.1.2).
 */
export function redirectUriProblem(raw: string): string | undefined {
  if (raw.length > MAX_REDIRECT_URI_LENGTH) return `a redirect URI is at most ${MAX_REDIRECT_URI_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'a redirect URI must be an absolute URI';
  }
  if (url.hash || raw.includes('#')) return 'a redirect URI must not have a fragment';
  if (url.username || url.password) return 'a redirect URI must not carry credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:')
    return LOOPBACK_HOSTS.has(url.hostname)
      ? undefined
      : 'a redirect URI over http must be a loopback address (localhost, 127.0.0.1, [::1]); use https otherwise';
  if (BROWSER_SCHEMES.has(url.protocol)) return `a redirect URI may not use ${url.protocol}`;
  return undefined;
}

/** Whether the redirect goes back to this computer (a person should be told: any local program may listen there). */
export const isLoopbackRedirect = (raw: string) => {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  } catch {
    return false;
  }
};

/** What the consent page names as where the code goes: the host, or the application's scheme. */
export function redirectTarget(raw: string): string {
  const url = new URL(raw);
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.host : url.protocol;
}
