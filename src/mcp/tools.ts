import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { EventFeedRequest, ListEventsRequest } from '../../generated/types.ts';
import { mcpTools } from '../../generated/mcp-tools.ts';
import type { Principal } from '../auth/principal.ts';
import { operationById } from '../contract/operations.ts';
import { ApiError, invalidArgument, toErrorBody } from '../errors.ts';
import { feedPageJson } from '../feed/page.ts';
import type { Reservation } from '../limits/memory-budget.ts';
import { PAGE_RESERVATION_BYTES } from '../limits/page-bytes.ts';
import type { Logger } from '../log.ts';
import { safeErrorFields } from '../log.ts';
import { requirePermission, type AppServices, type OperationContext } from '../operations/context.ts';
import { DEFAULT_LIMIT, eventFeed } from '../operations/event-feed.ts';
import { listEvents, listPageJson } from '../operations/list-events.ts';
import { summarizeFeedPage } from './text/feed-summary.ts';
import { summarizeListPage } from './text/list-events-summary.ts';

/** A tool's success: the same body as over HTTP, as bytes, and the French text for a person. */
interface ToolPage {
  structuredContent: Buffer[];
  text: string;
}

/**
 * Each tool runs its operation function (the one HTTP runs) and describes the page from the facts
 * read with it, never by parsing it: the answer is spliced from the stored bytes like the HTTP one.
 */
const tools: Record<string, (ctx: OperationContext, input: any) => Promise<ToolPage>> = {
  event_feed: async (ctx, input: EventFeedRequest) => {
    const page = await eventFeed(ctx, input, { facts: true });
    return { structuredContent: feedPageJson(page), text: summarizeFeedPage(page.events, page.next_cursor, input.limit ?? DEFAULT_LIMIT) };
  },
  list_events: async (ctx, input: ListEventsRequest) => {
    const page = await listEvents(ctx, input);
    return { structuredContent: listPageJson(page), text: summarizeListPage(page, input) };
  },
};

const knownTools = new Set<string>(mcpTools.map((tool) => tool.name));

/** What tools/call answers: a page to splice into the result, or an error result (`isError`). */
export type ToolAnswer = { page: ToolPage; reservation: Reservation } | { error: CallToolResult };

/**
 * tools/call: validates the arguments against the contract (same validator and messages as HTTP),
 * runs the same operation function, and answers French text plus the HTTP response body.
 * Failures are tool results with isError (the code leads the text), never protocol errors.
 * A page's memory stays reserved (limits/memory-budget.ts) until the caller has written it.
 */
export async function callTool(services: AppServices, principal: Principal, name: string, args: unknown, requestId: string, log: Logger): Promise<ToolAnswer> {
  const { rateLimiter, memory } = services;
  let reservation: Reservation | undefined;
  let reservedTokens = 0;
  try {
    rateLimiter.take(principal.keyId);
    if (!knownTools.has(name)) throw invalidArgument(`unknown tool "${name.slice(0, 60)}"; tools/list gives the available tools`);
    // As over HTTP: a key without the permission is refused before its arguments are looked at.
    requirePermission(principal, operationById(name)!.permission);
    // Omitted arguments mean none; anything else that is not an object is refused, as over HTTP.
    const input = services.requestValidator.check<any>(name, args === undefined ? {} : args);
    // A page is paid for as over HTTP (its tokens reserved, then settled at its size), and held
    // against the memory budget until its answer is written.
    reservedTokens = rateLimiter.reservePage(principal.keyId);
    reservation = await memory.admit(principal.workspaceId, PAGE_RESERVATION_BYTES);
    const page = await tools[name]!({ ...services, principal }, input);
    const bytes = page.structuredContent.reduce((sum, chunk) => sum + chunk.length, 0) + Buffer.byteLength(page.text);
    rateLimiter.chargeForBytes(principal.keyId, bytes, reservedTokens);
    reservation.resize(bytes + 64 * 1024);
    return { page, reservation };
  } catch (err) {
    if (reservedTokens) rateLimiter.charge(principal.keyId, -reservedTokens);
    reservation?.release();
    return { error: toolError(err, requestId, log) };
  }
}

function toolError(err: unknown, requestId: string, log: Logger): CallToolResult {
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

/** The JSON-RPC response to a tools/call, as chunks: the page's bytes go in as they are. */
export function toolResponse(id: string | number, answer: ToolAnswer): Buffer[] {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
  if ('error' in answer) return [Buffer.from(`${head}${JSON.stringify(answer.error)}}`)];
  const { text, structuredContent } = answer.page;
  return [Buffer.from(`${head}{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":`), ...structuredContent, Buffer.from('}}')];
}
