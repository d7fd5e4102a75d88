import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpToolName } from '../../generated/mcp-tools.ts';
import type { OperationInput, Operations } from '../../generated/operations.ts';
import type { Call } from '../edge/call.ts';
import { operationById } from '../contract/operations.ts';
import { OperationCall } from '../edge/operation-call.ts';
import { answerFor } from '../edge/temporary-failure.ts';
import { ApiError, invalidArgument, toErrorBody } from '../errors.ts';
import { feedPageJson } from '../feed/page.ts';
import type { Logger } from '../log.ts';
import { safeErrorFields } from '../log.ts';
import type { AppServices } from '../app/services.ts';
import type { OperationContext } from '../operations/context.ts';
import { eventFeed } from '../operations/event-feed.ts';
import { feedCursor } from '../operations/feed-cursor.ts';
import { listEvents, listPageJson } from '../operations/list-events.ts';
import { withDefaults } from '../operations/registry.ts';
import { summarizeFeedCursor } from './text/feed-cursor-summary.ts';
import { summarizeFeedPage } from './text/feed-summary.ts';
import { summarizeListPage } from './text/list-events-summary.ts';

/** A tool's success: the same body as over HTTP, as bytes, and the French text for a person. */
interface ToolPage {
  structuredContent: Buffer[];
  text: string;
}

type ToolRunner<Name extends McpToolName> = (ctx: OperationContext, input: OperationInput<Name>) => Promise<ToolPage>;

/**
 * Each tool runs its operation function (the one HTTP runs) and describes the page from the facts
 * read with it, never by parsing it: the answer is spliced from the stored bytes like the HTTP one.
 */
const tools: { readonly [Name in McpToolName]: ToolRunner<Name> } = {
  event_feed: async (ctx, input) => {
    const page = await eventFeed(ctx, input, { facts: true });
    return { structuredContent: feedPageJson(page), text: summarizeFeedPage(page.events, page.next_cursor, input.limit) };
  },
  feed_cursor: async (ctx, input) => {
    const position = await feedCursor(ctx, input);
    return { structuredContent: [Buffer.from(JSON.stringify(position.body))], text: summarizeFeedCursor(position) };
  },
  list_events: async (ctx, input) => {
    const page = await listEvents(ctx, input);
    return { structuredContent: listPageJson(page), text: summarizeListPage(page, input) };
  },
};

export const isTool = (name: string): name is McpToolName => Object.hasOwn(tools, name);

function runTool<Name extends McpToolName>(name: Name, ctx: OperationContext, request: Operations[Name]['request']): Promise<ToolPage> {
  const run: ToolRunner<Name> = tools[name];
  return run(ctx, withDefaults(name, request));
}

/**
 * What tools/call answers: a page to splice into the result (its memory held by the call until the
 * response closes), or an error result (`isError`).
 */
export type ToolAnswer = { page: ToolPage; answersAPage: boolean } | { error: CallToolResult; thrown: unknown };

/**
 * tools/call: validates the arguments against the contract (same validator and messages as HTTP),
 * runs the same operation function, and answers French text plus the HTTP response body.
 * Failures are tool results with isError (the code leads the text), never protocol errors.
 * A page is paid for and admitted as over HTTP, through the call (Call, OperationCall),
 * which holds its memory until the response closes.
 */
export async function callTool(
  services: AppServices,
  call: Call,
  name: string,
  args: unknown,
  requestId: string,
  log: Logger,
): Promise<ToolAnswer> {
  let op: OperationCall<McpToolName> | undefined;
  try {
    call.pay();
    if (!isTool(name)) throw invalidArgument(`unknown tool "${name.slice(0, 60)}"; tools/list gives the available tools`);
    // As over HTTP: a key without the permission is refused before its arguments are looked at.
    op = new OperationCall(services, call, { ...operationById(name)!, operationId: name });
    // Omitted arguments mean none; anything else that is not an object is refused, as over HTTP.
    const request = op.validate(args === undefined ? {} : args);
    op.reservePage();
    await op.ready();
    const page = await runTool(op.operationId, op.context, request);
    op.settle(page.structuredContent.reduce((sum, chunk) => sum + chunk.length, 0) + Buffer.byteLength(page.text));
    return { page, answersAPage: op.answersAPage };
  } catch (err) {
    call.refund();
    call.letGoOfMemory();
    return { error: toolError(err, requestId, log), thrown: err };
  }
}

function toolError(thrown: unknown, requestId: string, log: Logger): CallToolResult {
  const err = answerFor(thrown);
  const { body } = toErrorBody(err, requestId);
  if (!(err instanceof ApiError)) log.error({ ...safeErrorFields(err), request_id: requestId }, 'unhandled error in MCP tool');
  else if (err.status >= 500 && err.cause !== undefined)
    log.error({ ...safeErrorFields(err.cause), request_id: requestId }, err.message.slice(0, 120));
  // The error object is not put in structuredContent: the SDK client validates any
  // structuredContent against the tool's outputSchema, even on errors, and would throw.
  return {
    isError: true,
    content: [{ type: 'text', text: `${body.error.code} : ${body.error.message}` }],
    _meta: { 'event-feed/error': body.error },
  };
}

/** What a protocol generation adds to every result (2026-07-28: `resultType` and the server's identity in `_meta`). */
export interface ResultFields {
  resultType?: string;
  _meta?: Record<string, unknown>;
}

/** The JSON-RPC response to a tools/call, as chunks: the page's bytes go in as they are. */
export function toolResponse(id: string | number, answer: ToolAnswer, fields: ResultFields = {}): Buffer[] {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
  if ('error' in answer) {
    const result = { ...answer.error, ...fields, _meta: { ...answer.error._meta, ...fields._meta } };
    return [Buffer.from(`${head}${JSON.stringify(result)}}`)];
  }
  const { text, structuredContent } = answer.page;
  const extra = Object.keys(fields).length === 0 ? '' : `${JSON.stringify(fields).slice(1, -1)},`;
  return [
    Buffer.from(`${head}{${extra}"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":`),
    ...structuredContent,
    Buffer.from('}}'),
  ];
}
