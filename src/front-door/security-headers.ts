import type { IncomingMessage, ServerResponse } from 'node:http';

/** What every policy says: nothing may frame the page, no base URL may be changed. */
const ALWAYS = [`frame-ancestors 'none'`, `base-uri 'none'`];

/**
 * The web view (viewRouter): its page, style and module script from this origin, the API called
 * on it (fetch and EventSource), its blank icon a data: URL; its sign-in form posts only here.
 */
const VIEW_POLICY = [
  `default-src 'none'`,
  `script-src 'self'`,
  `style-src 'self'`,
  `img-src 'self' data:`,
  `connect-src 'self'`,
  `form-action 'self'`,
  ...ALWAYS,
].join('; ');

/**
 * The reference page (siteRouter's /docs): Swagger UI's bundle and start-up script from this origin,
 * the inline styles it sets on its elements, its icons as data: URLs, "Try it out" calling this origin.
 */
const DOCS_POLICY = [
  `default-src 'none'`,
  `script-src 'self'`,
  `style-src 'self' 'unsafe-inline'`,
  `img-src 'self' data:`,
  `font-src 'self' data:`,
  `connect-src 'self'`,
  `form-action 'self'`,
  ...ALWAYS,
].join('; ');

/**
 * Everything else: JSON answers, the contract, files, OAuth's answers. A page that runs nothing and
 * whose policy depends on its content (the consent page: its style's nonce, where its form may go)
 * replaces this with its own (sendPage), which refuses framing as well.
 */
const NOTHING_POLICY = [`default-src 'none'`, `form-action 'none'`, ...ALWAYS].join('; ');

const isView = (path: string) => path === '/';
const isDocs = (path: string) => /^\/docs\/?$/i.test(path);

/** The Content-Security-Policy of the answer to `path` (its query left out). */
export function contentSecurityPolicy(path: string): string {
  if (isView(path)) return VIEW_POLICY;
  if (isDocs(path)) return DOCS_POLICY;
  return NOTHING_POLICY;
}

/**
 * The headers every answer carries, whichever edge gives it, set once by the front door before any
 * edge runs: a policy fitting the page (contentSecurityPolicy), framing refused (frame-ancestors and
 * X-Frame-Options for older browsers), no Referer sent from our pages (the view's address and the
 * consent page's must not leave), and no content sniffing.
 */
export function setSecurityHeaders(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?', 1)[0]!;
  res.setHeader('Content-Security-Policy', contentSecurityPolicy(path));
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Content-Type-Options', 'nosniff');
}
