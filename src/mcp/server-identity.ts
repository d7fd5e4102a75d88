import { mcpTools } from '../../generated/mcp-tools.ts';

/** Who answers, for both protocol generations (the SDK's `initialize`, 2026-07-28's `server/discover` and results' `_meta`). */
export const SERVER_INFO = { name: 'event-feed', title: 'Flux des événements de messagerie', version: '1.0.0' };

export const INSTRUCTIONS =
  'Relit les événements de messagerie (mail.*) d’un espace, dans l’ordre d’émission. ' +
  'Appelez event_feed sans after pour commencer au plus ancien événement conservé, puis passez next_cursor comme after.';

/**
 * The tool descriptors exactly as generated from the contract, by name: one order for every call
 * and every protocol generation, so a client's cache and an assistant's prompt cache see the same
 * list (MCP 2026-07-28: servers SHOULD list tools in a deterministic order).
 */
export const TOOLS: ReadonlyArray<Record<string, unknown>> = [
  ...(mcpTools as unknown as Array<Record<string, unknown> & { name: string }>),
].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

/**
 * How long a client may keep tools/list and server/discover (2026-07-28's `ttlMs`): the tools
 * change only with a deployment. `public`: the same for every key, nothing in it is the caller's.
 */
export const LIST_CACHING = { ttlMs: 3_600_000, cacheScope: 'public' as const };
