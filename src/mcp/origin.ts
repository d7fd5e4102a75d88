import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { normalizedOrigin } from '../net/origins.ts';

/**
 * Which browser origins may call /mcp (MCP's Streamable HTTP transport: servers MUST validate
 * `Origin`, and answer 403 to an invalid one, against DNS rebinding).
 *
 * A request without `Origin` is not a browser's (assistants, the SDK, curl): it is served, its key
 * decides. A browser's request is served when its origin is
 * - listed in MCP_ALLOWED_ORIGINS (a web client on another origin, the deployment's public name), or
 * - the deployment's public origin (AppServices.publicOrigin, PUBLIC_URL) exactly, or
 * - the deployment's own origin as the request names it (`Origin`'s host is the `Host` header, and
 *   its scheme the public origin's: `https://host` is another origin than an http service's),
 *   when that host is one a rebinding page cannot take: an IP address or `localhost`. Under DNS
 *   rebinding the browser believes it talks to the attacker's name, so Host and Origin agree with
 *   each other there too; only a name the attacker cannot hold tells them apart. A deployment that
 *   browsers reach by a DNS name lists its origin (`https://events.example.com`).
 */
export class OriginPolicy {
  readonly #listed: ReadonlySet<string>;

  readonly #publicOrigin: () => string | undefined;

  constructor(allowedOrigins: readonly string[], publicOrigin: () => string | undefined = () => undefined) {
    this.#listed = new Set(allowedOrigins.map((origin) => normalizedOrigin(origin) ?? origin));
    this.#publicOrigin = publicOrigin;
  }

  allows(req: IncomingMessage): boolean {
    const header = req.headers.origin;
    if (header === undefined) return true;
    const origin = normalizedOrigin(header);
    if (origin === undefined) return false;
    if (this.#listed.has(origin)) return true;
    const own = this.#publicOrigin();
    if (own !== undefined && origin === own) return true;
    const url = new URL(origin);
    // The scheme counts: the service's own (its public origin's; http while it is not known).
    if (url.protocol !== (own === undefined ? 'http:' : new URL(own).protocol)) return false;
    const host = req.headers.host?.toLowerCase();
    return host !== undefined && url.host === host && unforgeableHost(url.hostname);
  }
}

/** A host name no DNS answer can make a browser send for a page it loaded from elsewhere. */
function unforgeableHost(hostname: string): boolean {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return bare === 'localhost' || isIP(bare) !== 0;
}
