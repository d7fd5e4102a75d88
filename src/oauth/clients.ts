import type { OAuthRegisteredClientsStore } from '@modelcontextprotocol/sdk/server/auth/clients.js';
import { CustomOAuthError, InvalidClientMetadataError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { OAuthClientInformationFull } from '@modelcontextprotocol/sdk/shared/auth.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { OAuthStore } from '../store/port.ts';
import type { ClientMetadataDocuments } from './client-metadata-documents.ts';
import { isDocumentClientId } from './client-metadata-documents.ts';
import {
  MAX_CLIENT_ID_LENGTH,
  MAX_CLIENT_NAME_LENGTH,
  MAX_REGISTERED_CLIENTS,
  MAX_UNUSED_CLIENTS_PER_ADDRESS,
  UNUSED_CLIENT_MS,
} from './limits.ts';
import { requestAddress } from './request-address.ts';
import { MAX_REDIRECT_URIS, redirectUriProblem } from './redirect-uris.ts';

/** The client looked up by the request in progress (OAuthClients.resolving). */
const resolved = new AsyncLocalStorage<OAuthClientInformationFull>();

/**
 * The clients the SDK's handlers (authorize, token, revoke) look up, and dynamic registration
 * (RFC 7591, the SDK's /register handler). Two kinds of client id:
 * - a URL: the client's metadata document, fetched (ClientMetadataDocuments);
 * - anything else: a client registered here (its id the SDK's random UUID), stored in oauth_clients.
 *
 * Every client is public (`token_endpoint_auth_method: none`): what proves a client is PKCE and
 * its registered redirect URIs. A registration asking for a secret is given none (RFC 7591 §3.2.1
 * lets the server replace what it does not support, and says so in its answer): assistants run
 * on people's computers and could not keep one, and the SDK's handler would keep and compare it
 * in clear text. The metadata says so (`token_endpoint_auth_methods_supported: ["none"]`).
 */
export class OAuthClients implements OAuthRegisteredClientsStore {
  constructor(
    private readonly store: OAuthStore,
    private readonly documents: ClientMetadataDocuments,
    private readonly now: () => number,
  ) {}

  /** The client a request already looked up (authorizeGate), given again to what `then` starts, without a second lookup. */
  static resolving(client: OAuthClientInformationFull, then: () => void): void {
    resolved.run(client, then);
  }

  async getClient(clientId: string): Promise<OAuthClientInformationFull | undefined> {
    const known = resolved.getStore();
    if (known?.client_id === clientId) return known;
    if (clientId.length === 0 || clientId.length > MAX_CLIENT_ID_LENGTH) return undefined;
    if (isDocumentClientId(clientId)) return this.documents.client(clientId);
    // A client nobody consented to within UNUSED_CLIENT_MS of its registration has expired.
    const row = await this.store.oauth.client(clientId, this.now() - UNUSED_CLIENT_MS);
    return row ? (JSON.parse(row.metadata) as OAuthClientInformationFull) : undefined;
  }

  async registerClient(asked: Omit<OAuthClientInformationFull, 'client_id' | 'client_id_issued_at'>): Promise<OAuthClientInformationFull> {
    // The SDK's handler has already parsed the metadata and chosen the client id (a random UUID).
    const { client_id, client_id_issued_at } = asked as OAuthClientInformationFull;
    if (asked.redirect_uris.length === 0 || asked.redirect_uris.length > MAX_REDIRECT_URIS) {
      throw new CustomOAuthError('invalid_redirect_uri', `register 1 to ${MAX_REDIRECT_URIS} redirect_uris`);
    }
    for (const uri of asked.redirect_uris) {
      const problem = redirectUriProblem(uri);
      if (problem) throw new CustomOAuthError('invalid_redirect_uri', problem);
    }
    if (asked.grant_types && !asked.grant_types.includes('authorization_code')) {
      throw new InvalidClientMetadataError('grant_types must include authorization_code (the only flow served, with refresh_token)');
    }
    if (asked.response_types && !asked.response_types.includes('code'))
      throw new InvalidClientMetadataError('response_types must include code');
    const client: OAuthClientInformationFull = {
      client_id,
      ...(client_id_issued_at !== undefined ? { client_id_issued_at } : {}),
      redirect_uris: asked.redirect_uris,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...(asked.client_name ? { client_name: asked.client_name.slice(0, MAX_CLIENT_NAME_LENGTH) } : {}),
      ...(asked.client_uri ? { client_uri: asked.client_uri } : {}),
      ...(asked.software_id ? { software_id: asked.software_id.slice(0, 200) } : {}),
      ...(asked.software_version ? { software_version: asked.software_version.slice(0, 100) } : {}),
    };
    const now = this.now();
    const stored = await this.store.oauth.registerClient(
      { client_id, metadata: JSON.stringify(client), created_at: now, used_at: null, address: requestAddress() },
      { cap: MAX_REGISTERED_CLIENTS, perAddress: MAX_UNUSED_CLIENTS_PER_ADDRESS, unusedBefore: now - UNUSED_CLIENT_MS },
    );
    if (stored === 'address_full')
      throw new CustomOAuthError(
        'temporarily_unavailable',
        `${MAX_UNUSED_CLIENTS_PER_ADDRESS} clients registered from this address are not used yet; each expires ${UNUSED_CLIENT_MS / 60_000} minutes after its registration unless a person consents to it`,
      );
    if (stored === 'full')
      throw new CustomOAuthError('temporarily_unavailable', 'too many clients are registered right now; try again later');
    return client;
  }
}
