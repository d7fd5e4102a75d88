import { context, trace } from '@opentelemetry/api';
import { activeTracer } from './active.ts';

/**
 * The log mixin (createLogger) while tracing is on: `trace_id` and `span_id` of the span the line
 * is written in, so a line and its trace are found from each other. Nothing outside any span. A
 * new object each time: pino merges the line's own fields into what the mixin returns.
 */
export function traceLogFields(): Record<string, string> {
  if (!activeTracer()) return {};
  const span = trace.getSpan(context.active());
  return span ? spanLogFields(span) : {};
}

/** The same fields for a given span (a request's line, written after its context is gone). */
export function spanLogFields(span: { spanContext(): { traceId: string; spanId: string } }): Record<string, string> {
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
