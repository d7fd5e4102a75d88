/** What the OAuth authorization server asks of storage (Store.oauth): registered clients, pending requests, grants. */

/** A client registered dynamically (RFC 7591): the metadata it registered, as JSON. Clients are public: no secret. */
export interface OAuthClientRow {
  client_id: string;
  metadata: string;
  created_at: number;
  /** When a person first consented to it; null while never used. */
  used_at: number | null;
  /** The client address that registered it (IPv6 by /64); null for a row from before addresses were kept. */
  address: string | null;
}

/** Whether a row was stored under the caps: `full` the global cap, `address_full` the asking address's. */
export type CappedInsert = 'stored' | 'full' | 'address_full';

/** An authorization request waiting for the person's consent (the consent page's). */
export interface OAuthRequestRow {
  /** SHA-256 (hex) of the request's handle, the consent form's hidden field. */
  handle_sha256: string;
  /** SHA-256 (hex) of the browser's cookie: the form is only taken from the browser that opened it. */
  browser_sha256: string;
  client_id: string;
  redirect_uri: string;
  /** 1 when the client named redirect_uri in the request (the token request must name it again). */
  redirect_uri_given: number;
  code_challenge: string;
  state: string | null;
  scope: string;
  resource: string;
  /** The API key the person gave, once checked; null before. */
  key_id: string | null;
  key_attempts: number;
  created_at: number;
  expires_at: number;
  /** The client address that opened it (IPv6 by /64); null for a row from before addresses were kept. */
  address: string | null;
}

/** A grant's tokens as stored: hashes (SHA-256, hex) and when each stops working. */
export interface OAuthTokenHashes {
  access_sha256: string;
  access_expires_at: number;
  refresh_sha256: string;
  refresh_expires_at: number;
}

/** One consent: its code, then its one live access token and refresh token (hashes only), the family they revoke together. */
export interface OAuthGrantRow {
  id: string;
  client_id: string;
  key_id: string;
  scope: string;
  resource: string;
  created_at: number;
  /** After this nothing of the grant works any more (its code unused, or its refresh token expired). */
  expires_at: number;
  code_sha256: string;
  code_challenge: string;
  redirect_uri: string;
  redirect_uri_given: number;
  code_expires_at: number;
  code_used_at: number | null;
  access_sha256: string | null;
  access_expires_at: number | null;
  refresh_sha256: string | null;
  refresh_expires_at: number | null;
  revoked_at: number | null;
  /** The issuer URL of the authorization server that issued it (its code and refresh tokens redeem there only); null for a grant from before issuers were kept. */
  issuer: string | null;
}

/** The OAuth authorization server's tables: registered clients, pending requests, grants. */
export interface OAuthTables {
  /**
   * Registers a client unless `cap` live ones are registered, or `perAddress` live ones never
   * used from the row's address, after deleting a batch of those never used and registered before
   * `unusedBefore` (expired: they count for nothing). Concurrent registrations may pass a cap by
   * how many run at once.
   */
  registerClient(row: OAuthClientRow, limits: { cap: number; perAddress: number; unusedBefore: number }): Promise<CappedInsert>;
  /** A registered client; one never used and registered before `unusedBefore` has expired and is not found. */
  client(clientId: string, unusedBefore: number): Promise<OAuthClientRow | undefined>;
  markClientUsed(clientId: string, now: number): Promise<void>;
  /**
   * Stores a pending request unless `cap` unexpired ones wait, or `perAddress` unexpired ones of
   * the row's address (expired ones are deleted first, a batch at a time).
   */
  addRequest(row: OAuthRequestRow, limits: { cap: number; perAddress: number; now: number }): Promise<CappedInsert>;
  request(handleSha256: string): Promise<OAuthRequestRow | undefined>;
  updateRequest(handleSha256: string, changes: { key_id?: string | null; key_attempts?: number }): Promise<void>;
  /** Deletes a pending request; true only for the call that deleted it (a consent is given once). */
  takeRequest(handleSha256: string): Promise<boolean>;
  /**
   * Stores a grant. First deletes the key's dead grants (expired or revoked: nothing of them works
   * any more, whether their row is there or not), and revokes its oldest live ones so that at most
   * `maxPerKey` live grants remain with this one: a key's rows stay bounded.
   */
  addGrant(row: OAuthGrantRow, limits: { maxPerKey: number; now: number }): Promise<void>;
  grant(id: string): Promise<OAuthGrantRow | undefined>;
  grantByCode(codeSha256: string): Promise<OAuthGrantRow | undefined>;
  /** The grant an access token belongs to (every MCP request with a token asks: one fixed indexed statement). */
  grantByAccessToken(accessSha256: string): Promise<OAuthGrantRow | undefined>;
  /** Gives the grant its tokens if its code is unused, unexpired and the grant live; false otherwise (the code is spent once). */
  redeemCode(codeSha256: string, now: number, tokens: OAuthTokenHashes): Promise<boolean>;
  /** Replaces the grant's tokens if `refreshSha256` is still its refresh token, unexpired, and the grant live (rotation); false otherwise. */
  rotateTokens(grantId: string, refreshSha256: string, now: number, tokens: OAuthTokenHashes): Promise<boolean>;
  revokeGrant(grantId: string, now: number): Promise<void>;
}

export interface OAuthStore {
  oauth: OAuthTables;
}
