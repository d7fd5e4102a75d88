import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { mcpTools } from '../../generated/mcp-tools.ts';
import type { EventFeedResponse, EventFeedRequest, ListEventsRequest, ListEventsResponse } from '../../generated/types.ts';
import type { Principal } from '../auth/principal.ts';
import { ApiError, invalidArgument, toErrorBody } from '../errors.ts';
import type { Logger } from '../log.ts';
import { safeErrorFields } from '../log.ts';
import type { AppServices } from '../operations/context.ts';
import { DEFAULT_LIMIT } from '../operations/event-feed.ts';
import { operations, outcomeText } from '../operations/registry.ts';
import { requirePermission } from '../operations/context.ts';
import { operationById } from '../contract/operations.ts';
import { summarizeFeedPage } from './text/feed-summary.ts';
import { summarizeListPage } from './text/list-events-summary.ts';

// Per tool: the French text for a person, from the same object the HTTP call answers.
const describers: Record<string, (result: any, input: any) => string> = {
  event_feed: (result: EventFeedResponse, input: EventFeedRequest) => summarizeFeedPage(result, input.limit ?? DEFAULT_LIMIT),
  list_events: (result: ListEventsResponse, input: ListEventsRequest) => summarizeListPage(result, input),
};

const knownTools = new Set<string>(mcpTools.map((tool) => tool.name));

/**
 * tools/call: validates the arguments against the contract (same validator and messages as HTTP),
 * runs the same operation function, and answers French text plus the HTTP response object.
 * Failures are tool results with isError (the code leads the text), never protocol errors.
 */
export async function callTool(
  services: AppServices,
  principal: Principal,
  name: string,
  args: unknown,
  requestId: string,
  log: Logger,
): Promise<CallToolResult> {
  try {
    services.rateLimiter.take(principal.keyId);
    if (!knownTools.has(name)) throw invalidArgument(`unknown tool "${name.slice(0, 60)}"; tools/list gives the available tools`);
    // As over HTTP: a key without the permission is refused before its arguments are looked at.
    requirePermission(principal, operationById(name)!.permission);
    // Omitted arguments mean none; anything else that is not an object is refused, as over HTTP.
    const input = services.requestValidator.check<any>(name, args === undefined ? {} : args);
    const outcome = await operations[name]!({ ...services, principal }, input);
    const structuredContent = JSON.parse(outcomeText(outcome.json)) as Record<string, unknown>;
    return { content: [{ type: 'text', text: describers[name]!(structuredContent, input) }], structuredContent };
  } catch (err) {
    const { body } = toErrorBody(err, requestId);
    if (!(err instanceof ApiError)) log.error({ ...safeErrorFields(err), request_id: requestId }, 'unhandled error in MCP tool');
    // The error object is not put in structuredContent: the SDK client validates any
    // structuredContent against the tool's outputSchema, even on errors, and would throw.
    return {
      isError: true,
      content: [{ type: 'text', text: `${body.error.code} : ${body.error.message}` }],
      _meta: { 'event-feed/error': body.error },
    };
  }
}
