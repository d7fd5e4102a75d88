import type { Tracer } from '@opentelemetry/api';

/**
 * The tracer of this process once tracing has started (startTracing), undefined while it is off:
 * every helper of the tracing folder asks this first and, off, returns at once without
 * allocating anything.
 */
let current: Tracer | undefined;

export function activeTracer(): Tracer | undefined {
  return current;
}

export function setActiveTracer(tracer: Tracer | undefined): void {
  current = tracer;
}

/** Whether spans are made at all in this process. */
export function tracingOn(): boolean {
  return current !== undefined;
}
