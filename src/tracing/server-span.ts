import { SpanStatusCode, type Span } from '@opentelemetry/api';

/** What a request's span is told at its end, as the edges noted it (RequestLocals has these). */
export interface AnsweredRequest {
  transport: string;
  operation?: string;
  errorCode?: string;
  principal?: { workspaceId: string };
}

/**
 * Ends a request's SERVER span, named after its operation (the contract's operationId, over HTTP
 * and MCP alike; `mcp` for an MCP message that calls no tool, the method otherwise: the site,
 * probes). Its attributes are the method, status, transport, operation, error code and the
 * caller's workspace id: never a path with its query, a header or a body.
 */
export function endServerSpan(span: Span, request: AnsweredRequest, status: number, finished: boolean): void {
  if (request.operation) span.updateName(request.operation);
  else if (request.transport === 'mcp') span.updateName('mcp');
  span.setAttribute('http.response.status_code', status);
  span.setAttribute('event_feed.transport', request.transport);
  if (request.operation) {
    span.setAttribute('event_feed.operation', request.operation);
    if (request.transport === 'http') span.setAttribute('http.route', `/v1/${request.operation}`);
    else span.setAttributes({ 'rpc.system': 'jsonrpc', 'rpc.method': 'tools/call', 'event_feed.mcp.tool': request.operation });
  }
  if (request.principal) span.setAttribute('event_feed.workspace_id', request.principal.workspaceId);
  if (request.errorCode) span.setAttribute('error.type', request.errorCode);
  if (!finished) span.setAttribute('event_feed.answer', 'cut short');
  if (status >= 500 || request.errorCode === 'internal') span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
