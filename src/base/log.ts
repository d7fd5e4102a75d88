import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * `fields` go on every line (a worker's number under `serve --workers`); `mixin`, when given, adds
 * its fields to each line (with tracing on, the command passes traceLogFields: the line's
 * `trace_id` and `span_id`; without, no line pays for looking).
 */
export function createLogger(level: string, fields?: Record<string, unknown>, mixin?: () => Record<string, unknown>): Logger {
  return pino({
    level,
    base: fields ?? undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(mixin ? { mixin } : {}),
  });
}

/**
 * What may be logged of an unexpected error: its kind and driver code, and the driver's own words
 * without the SQL text knex prefixes them with (statements can quote request data). No stack: logs
 * leave the machine; a request id ties the line to the client's report.
 */
export function safeErrorFields(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { error_kind: typeof err };
  const message = err.message.includes(' - ') ? err.message.slice(err.message.lastIndexOf(' - ') + 3) : err.message;
  return { error_kind: err.name, error_code: (err as { code?: unknown }).code, error_message: message.slice(0, 300) };
}
