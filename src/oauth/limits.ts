/*
 * How long what the authorization server hands out lives, and how much of it may exist: no
 * request, client or key makes the tables or memory grow without bound.
 */

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** An access token works for an hour at most (the specification: short-lived); then the client refreshes. */
export const ACCESS_TOKEN_TTL_MS = 60 * MINUTE;
/** A refresh token works for 30 days after it was issued; each refresh issues the next one (rotation). */
export const REFRESH_TOKEN_TTL_MS = 30 * DAY;
/** An authorization code is exchanged within a minute, once. */
export const CODE_TTL_MS = MINUTE;
/** A person has ten minutes from the assistant's request to consent. */
export const REQUEST_TTL_MS = 10 * MINUTE;
/** Wrong keys typed on one consent page before it must be started again. */
export const KEY_ATTEMPTS = 5;

/** Authorization requests waiting for consent, in all (each expires after REQUEST_TTL_MS). */
export const MAX_PENDING_REQUESTS = 10_000;
/**
 * ... and from one client address (IPv6 by its /64): a person opens one at a time, a handful of
 * addresses cannot fill what every client shares (500 addresses would be needed).
 */
export const MAX_PENDING_REQUESTS_PER_ADDRESS = 20;
/** Dynamically registered clients, in all; one never used (no consent given) expires after UNUSED_CLIENT_MS. */
export const MAX_REGISTERED_CLIENTS = 10_000;
/** ... and registered from one client address (IPv6 by its /64) and not used yet. */
export const MAX_UNUSED_CLIENTS_PER_ADDRESS = 20;
export const UNUSED_CLIENT_MS = 30 * MINUTE;
/** Live grants (token families) per API key: a new consent beyond it revokes the key's oldest. */
export const MAX_GRANTS_PER_KEY = 20;

/** A client metadata document: fetched within this time, at most this size, kept this long unless its Cache-Control says less. */
export const DOCUMENT_TIMEOUT_MS = 5000;
export const DOCUMENT_MAX_BYTES = 64 * 1024;
export const DOCUMENT_CACHE_MS = 5 * MINUTE;
export const DOCUMENT_MAX_CACHE_MS = DAY;
/** A document that could not be used is not fetched again for this long. */
export const DOCUMENT_FAILURE_CACHE_MS = 30_000;
/** Documents (and failures) kept in memory at once. */
export const DOCUMENTS_KEPT = 1000;

/** The longest client id, state and client name taken (beyond, the request is refused before any lookup). */
export const MAX_CLIENT_ID_LENGTH = 1000;
export const MAX_STATE_LENGTH = 1000;
export const MAX_CLIENT_NAME_LENGTH = 200;

/** Per client address: requests to the OAuth endpoints (a flow takes about ten), and registrations. */
export const ADDRESS_REQUESTS_PER_SECOND = 1;
export const ADDRESS_REQUESTS_BURST = 60;
export const ADDRESS_REGISTRATIONS_PER_SECOND = 1 / 60;
export const ADDRESS_REGISTRATIONS_BURST = 10;
