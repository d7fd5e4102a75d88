import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpToolName } from '../../generated/mcp-tools.ts';
import type { OperationInput, Operations } from '../../generated/operations.ts';
import { answerOperation, payForMessage } from '../calls/answer-operation.ts';
import type { Call } from '../calls/call.ts';
import type { CallServices } from '../calls/call-services.ts';
import { ApiError, invalidArgument, toErrorBody } from '../base/errors.ts';
import type { Logger } from '../base/log.ts';
import { safeErrorFields } from '../base/log.ts';
import { withDefaults, type OperationOutcome, type OperationResult, type ReadView } from '../operations/registry.ts';
import { answerFor } from '../front-door/temporary-failure.ts';
import { summarizeFeedCursor } from './text/feed-cursor-summary.ts';
import { summarizeFeedPage } from './text/feed-summary.ts';
import { summarizeListPage } from './text/list-events-summary.ts';

/** A tool's success: the same body as over HTTP, as bytes, and the French text for a person. */
interface ToolPage {
  structuredContent: Buffer[];
  text: string;
}

/**
 * The French text of each tool's result, made from the facts read with it, never by parsing the
 * page: the answer is spliced from the stored bytes like the HTTP one.
 */
const texts: { readonly [Name in McpToolName]: (result: OperationResult<Name>, input: OperationInput<Name>) => string } = {
  event_feed: (page, input) => summarizeFeedPage(page.events, page.next_cursor, input.limit),
  feed_cursor: (position) => summarizeFeedCursor(position),
  list_events: (page, input) => summarizeListPage(page, input),
};

/** How each tool reads: the feed with its events' facts (the text counts types and times). */
const VIEW: ReadView = { facts: true };

export const isTool = (name: string): name is McpToolName => Object.hasOwn(texts, name);

/**
 * What tools/call answers: a page to splice into the result (its memory held by the call until the
 * response closes), or an error result (`isError`).
 */
export type ToolAnswer = { page: ToolPage } | { error: CallToolResult; thrown: unknown };

/**
 * tools/call: the tool's operation answered as over HTTP (answerOperation: its message paid,
 * the permission, the contract's validator and messages, the page admitted and paid at its size,
 * its text included), with French text beside the HTTP response body. Failures are tool results
 * with isError (the code leads the text), never protocol errors.
 */
export async function callTool(
  services: CallServices,
  call: Call,
  name: string,
  args: unknown,
  requestId: string,
  log: Logger,
): Promise<ToolAnswer> {
  if (!isTool(name)) {
    const error =
      payForMessage(call)?.error ?? invalidArgument(`unknown tool "${name.slice(0, 60)}"; tools/list gives the available tools`);
    return { error: toolError(error, requestId, log), thrown: error };
  }
  let text = '';
  // Omitted arguments mean none; anything else that is not an object is refused, as over HTTP.
  const answered = await answerOperation(services, call, name, () => (args === undefined ? {} : args), {
    transport: 'mcp',
    paysItsMessage: true,
    view: VIEW,
    extraBytes: (outcome) => {
      text = textOf(name, outcome as OperationOutcome<typeof name>, args);
      return Buffer.byteLength(text);
    },
  });
  if (!answered.ok) return { error: toolError(answered.error, requestId, log), thrown: answered.error };
  const json = answered.outcome.json;
  return { page: { structuredContent: typeof json === 'string' ? [Buffer.from(json)] : json, text } };
}

function textOf<Name extends McpToolName>(name: Name, outcome: OperationOutcome<Name>, args: unknown): string {
  const text = texts[name] as (result: OperationResult<Name>, input: OperationInput<Name>) => string;
  return text(outcome.result, withDefaults(name, (args ?? {}) as Operations[Name]['request']));
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
