import { InvalidClientError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { OAuthClientMetadataSchema, type OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { Agent, request } from 'undici';
import { safeLookup, urlProblem, type TargetPolicy } from '../net/target-policy.ts';
import {
  DOCUMENT_CACHE_MS,
  DOCUMENT_FAILURE_CACHE_MS,
  DOCUMENT_MAX_BYTES,
  DOCUMENT_MAX_CACHE_MS,
  DOCUMENT_TIMEOUT_MS,
  DOCUMENTS_KEPT,
  MAX_CLIENT_NAME_LENGTH,
} from './limits.ts';
import { MAX_REDIRECT_URIS, redirectUriProblem } from './redirect-uris.ts';

/** A client id that is a URL: a client metadata document to fetch (draft-ietf-oauth-client-id-metadata-document). */
export const isDocumentClientId = (clientId: string) => /^https?:\/\//i.test(clientId);

interface Kept {
  /** The client, or why its document cannot be used (the invalid_client description). */
  outcome: { client: OAuthClientInformationFull } | { problem: string };
  until: number;
}

/**
 * Clients that name themselves by the URL of their metadata document, as the MCP authorization
 * specification prefers: the document is fetched when the client is first seen, and kept for
 * what its Cache-Control allows (DOCUMENT_CACHE_MS when it says nothing, never more than
 * DOCUMENT_MAX_CACHE_MS), a failure for DOCUMENT_FAILURE_CACHE_MS; at most DOCUMENTS_KEPT at once.
 *
 * The fetch is a request the service makes to an address a stranger chose: it goes through the
 * outbound policy webhooks go through (TargetPolicy: https to public addresses only,
 * checked again on the addresses the connection uses, unless the operator allows insecure
 * targets), follows no redirect, and is bounded in time (DOCUMENT_TIMEOUT_MS) and size
 * (DOCUMENT_MAX_BYTES). Concurrent requests for one document share one fetch.
 */
export class ClientMetadataDocuments {
  readonly #agent: Agent;
  readonly #kept = new Map<string, Kept>();
  readonly #fetching = new Map<string, Promise<Kept>>();

  constructor(
    private readonly policy: TargetPolicy,
    private readonly now: () => number = Date.now,
  ) {
    this.#agent = new Agent({
      connect: { lookup: safeLookup(policy), timeout: DOCUMENT_TIMEOUT_MS },
      headersTimeout: DOCUMENT_TIMEOUT_MS,
      bodyTimeout: DOCUMENT_TIMEOUT_MS,
    });
  }

  /** The client a metadata document URL describes; throws invalid_client saying why when it cannot be used. */
  async client(url: string): Promise<OAuthClientInformationFull> {
    let kept = this.#kept.get(url);
    if (!kept || kept.until <= this.now()) {
      let fetching = this.#fetching.get(url);
      if (!fetching) {
        fetching = this.#fetch(url).finally(() => this.#fetching.delete(url));
        this.#fetching.set(url, fetching);
      }
      kept = await fetching;
    }
    if ('problem' in kept.outcome) throw new InvalidClientError(`client metadata document ${kept.outcome.problem}`);
    return kept.outcome.client;
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  async #fetch(url: string): Promise<Kept> {
    let kept: Kept;
    try {
      const { client, maxAgeMs } = await this.#load(url);
      kept = { outcome: { client }, until: this.now() + maxAgeMs };
    } catch (err) {
      kept = {
        outcome: { problem: err instanceof DocumentProblem ? err.message : 'could not be fetched' },
        until: this.now() + DOCUMENT_FAILURE_CACHE_MS,
      };
    }
    this.#kept.delete(url);
    if (this.#kept.size >= DOCUMENTS_KEPT) this.#kept.delete(this.#kept.keys().next().value!);
    this.#kept.set(url, kept);
    return kept;
  }

  async #load(url: string): Promise<{ client: OAuthClientInformationFull; maxAgeMs: number }> {
    const problem = urlProblem(url, this.policy);
    if (problem) throw new DocumentProblem(`URL refused: ${problem.replace(/^url /, 'it ')}`);
    if (new URL(url).pathname === '/') throw new DocumentProblem('URL refused: it must have a path');
    const response = await request(url, {
      dispatcher: this.#agent,
      method: 'GET',
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(DOCUMENT_TIMEOUT_MS),
    });
    if (response.statusCode !== 200) {
      discard(response.body);
      throw new DocumentProblem(`answered HTTP ${response.statusCode} (200 expected; redirects are not followed)`);
    }
    const length = Number(response.headers['content-length'] ?? 0);
    if (length > DOCUMENT_MAX_BYTES) {
      discard(response.body);
      throw new DocumentProblem(`is over ${DOCUMENT_MAX_BYTES / 1024} KiB`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > DOCUMENT_MAX_BYTES) {
        discard(response.body);
        throw new DocumentProblem(`is over ${DOCUMENT_MAX_BYTES / 1024} KiB`);
      }
      chunks.push(chunk as Buffer);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new DocumentProblem('is not JSON');
    }
    return { client: documentClient(url, body), maxAgeMs: cacheLifetime(response.headers['cache-control']) };
  }
}

class DocumentProblem extends Error {}

/**
 * Drops an answer's body unread. undici's body emits an AbortError when destroyed before it was
 * read: without a listener that error would be uncaught and end the process (a document server
 * answering 404 could stop the service).
 */
function discard(body: NodeJS.ReadableStream & { destroy(): void }): void {
  body.on('error', () => {});
  body.destroy();
}

/**
 * The client a document describes, checked as the specification requires: a JSON object whose
 * `client_id` is exactly its URL, with `client_name` and `redirect_uris` (each acceptable as a
 * registered one would be: redirectUriProblem), for a public client (no secret: the document is
 * public; `token_endpoint_auth_method` none or absent, since private_key_jwt is not supported).
 */
function documentClient(url: string, body: unknown): OAuthClientInformationFull {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new DocumentProblem('is not a JSON object');
  const fields = body as Record<string, unknown>;
  if (fields.client_id !== url) throw new DocumentProblem('has a client_id that is not exactly its own URL');
  if ('client_secret' in fields || 'client_secret_expires_at' in fields) throw new DocumentProblem('must not contain a client secret');
  const parsed = OAuthClientMetadataSchema.safeParse(body);
  if (!parsed.success)
    throw new DocumentProblem(
      `is not valid client metadata: ${parsed.error.issues
        .map((issue) => `${issue.path.join('.')}: ${issue.message}`)
        .join('; ')
        .slice(0, 300)}`,
    );
  const metadata = parsed.data;
  if (typeof metadata.client_name !== 'string' || metadata.client_name.trim() === '') throw new DocumentProblem('has no client_name');
  if (metadata.redirect_uris.length === 0 || metadata.redirect_uris.length > MAX_REDIRECT_URIS)
    throw new DocumentProblem(`must list 1 to ${MAX_REDIRECT_URIS} redirect_uris`);
  for (const uri of metadata.redirect_uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new DocumentProblem(`has a redirect URI refused: ${problem}`);
  }
  if (metadata.token_endpoint_auth_method !== undefined && metadata.token_endpoint_auth_method !== 'none') {
    throw new DocumentProblem('asks for token_endpoint_auth_method other than "none" (only public clients with PKCE are supported)');
  }
  return {
    client_id: url,
    client_name: metadata.client_name.slice(0, MAX_CLIENT_NAME_LENGTH),
    redirect_uris: metadata.redirect_uris,
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    ...(metadata.client_uri ? { client_uri: metadata.client_uri } : {}),
  };
}

/** How long a fetched document is kept: its Cache-Control's max-age within bounds, none for no-store or no-cache. */
function cacheLifetime(header: string | string[] | undefined): number {
  const value = (Array.isArray(header) ? header.join(',') : (header ?? '')).toLowerCase();
  if (/\bno-store\b|\bno-cache\b/.test(value)) return 0;
  const maxAge = /\bmax-age=(\d+)/.exec(value);
  if (!maxAge) return DOCUMENT_CACHE_MS;
  return Math.min(DOCUMENT_MAX_CACHE_MS, Number(maxAge[1]) * 1000);
}
