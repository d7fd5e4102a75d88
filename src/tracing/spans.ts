import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { activeTracer } from './active.ts';

export type { Span } from '@opentelemetry/api';

/*
 * The spans the layers make, each helper a no-op returning at once while tracing is off
 * (activeTracer). No helper takes free text from a request: names are fixed or an operation's id,
 * and attributes come from fixed sets (ids of the service's own rows, counts, codes), never a key,
 * token, secret, cursor, URL or anything a person wrote.
 */

/** The span of the current async context, when one is recording (an unsampled trace's is not). */
export function recordingSpan(): Span | undefined {
  if (!activeTracer()) return undefined;
  const span = trace.getSpan(context.active());
  return span?.isRecording() ? span : undefined;
}

/**
 * A request's SERVER span, continuing the caller's trace when it sent a `traceparent`; named
 * after its method until the edge knows the operation (endServerSpan renames it). Undefined while off.
 */
export function startServerSpan(headers: Readonly<Record<string, string | string[] | undefined>>, method: string): ServerSpan | undefined {
  const tracer = activeTracer();
  if (!tracer) return undefined;
  const parent = headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

export interface ServerSpan {
  span: Span;
  /** The context the request is handled in (context.with), so what it calls makes child spans. */
  context: Context;
}

/** Runs `work` with `span` as the current span (for the store's and the group commit's children). */
export function inContext<T>(ctx: Context, work: () => T): T {
  return context.with(ctx, work);
}

/**
 * `work` as a CLIENT span of the database, child of the current span, when one is recording:
 * nothing when off or outside a sampled trace (background work makes no lone database spans).
 */
export function inDatabaseSpan<T>(operation: string, system: string, work: () => T): T {
  const tracer = activeTracer();
  if (!tracer) return work();
  const parent = context.active();
  if (!trace.getSpan(parent)?.isRecording()) return work();
  const span = tracer.startSpan(
    operation,
    { kind: SpanKind.CLIENT, attributes: { 'db.system.name': system, 'db.system': system, 'db.operation.name': operation } },
    parent,
  );
  let result: T;
  try {
    result = context.with(trace.setSpan(parent, span), work);
  } catch (err) {
    endFailed(span, err);
    throw err;
  }
  if (result instanceof Promise) {
    return result.then(
      (value) => {
        span.end();
        return value;
      },
      (err: unknown) => {
        endFailed(span, err);
        throw err;
      },
    ) as T;
  }
  span.end();
  return result;
}

/** Ends a span that failed: its error's kind only (a message may quote data), or the words given (fixed ones). */
export function endFailed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.setAttribute('error.type', typeof err === 'string' ? err : err instanceof Error ? err.name : typeof err);
  span.end();
}

/** An event on the current recording span (a held read's wait and wake). */
export function spanEvent(name: string, attributes?: Attributes): void {
  recordingSpan()?.addEvent(name, attributes);
}

/**
 * The current span's context as a W3C `traceparent` (version 00), what an outbox row keeps so its
 * deliveries join the emit's trace; undefined while off or outside any span.
 */
export function currentTraceparent(): string | undefined {
  if (!activeTracer()) return undefined;
  const span = trace.getSpan(context.active());
  if (!span) return undefined;
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!trace.isSpanContextValid(span.spanContext())) return undefined;
  return `00-${traceId}-${spanId}-${(traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00'}`;
}

/**
 * The events of one group commit: a span of its own (INTERNAL, child of the first sampled emit's
 * span, linked to every emit it carried), the emits' spans each told which batch they joined.
 * `work` runs in its context, so the append's database span is its child. Runs `work` alone when
 * no emit of the batch is traced.
 */
export function inGroupCommitSpan<T>(emits: ReadonlyArray<Span | undefined>, work: () => Promise<T>): Promise<T> {
  const tracer = activeTracer();
  if (!tracer) return work();
  const traced = emits.filter((span): span is Span => span !== undefined);
  if (traced.length === 0) return work();
  const parent = trace.setSpan(ROOT_CONTEXT, traced[0]!);
  const span = tracer.startSpan(
    'group commit',
    {
      kind: SpanKind.INTERNAL,
      attributes: { 'event_feed.group_commit.events': emits.length },
      links: traced.map((emit) => ({ context: emit.spanContext() })),
    },
    parent,
  );
  const batch = span.spanContext();
  for (const emit of traced) {
    emit.addEvent('joined a group commit', {
      'event_feed.group_commit.trace_id': batch.traceId,
      'event_feed.group_commit.span_id': batch.spanId,
      'event_feed.group_commit.events': emits.length,
    });
  }
  return context.with(trace.setSpan(parent, span), work).then(
    (value) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      endFailed(span, err);
      throw err;
    },
  );
}

/**
 * One webhook delivery attempt as a CLIENT span in the trace of the emit that queued it (its
 * outbox row's `traceparent`), linked to that emit's span, so every retry of it is found from the
 * emit. Undefined while off. `headers` carries this span's own `traceparent`, for the receiver.
 */
export function startDeliverySpan(
  storedTraceparent: string | null,
  attributes: Attributes,
): { span: Span; headers: Record<string, string> } | undefined {
  const tracer = activeTracer();
  if (!tracer) return undefined;
  const emit = storedTraceparent === null ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, { traceparent: storedTraceparent });
  const emitSpan = trace.getSpanContext(emit);
  const span = tracer.startSpan(
    'webhook delivery',
    {
      kind: SpanKind.CLIENT,
      attributes: { 'http.request.method': 'POST', ...attributes },
      ...(emitSpan ? { links: [{ context: emitSpan, attributes: { 'event_feed.link': 'emit' } }] } : {}),
    },
    emit,
  );
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(emit, span), headers);
  return { span, headers };
}
