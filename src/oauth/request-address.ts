import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The client address (RequestLocals.clientAddress: IPv6 by its /64) of the OAuth request in
 * progress, for what the SDK's handlers call without the request (OAuthClients.registerClient)
 * and for beginConsent: the per-address caps count by it. createOAuthEdge runs each request in it.
 */
const address = new AsyncLocalStorage<string>();

export const withRequestAddress = (clientAddress: string, then: () => void): void => address.run(clientAddress, then);

/** The address of the request in progress; null outside one (nothing then counts it per address). */
export const requestAddress = (): string | null => address.getStore() ?? null;
