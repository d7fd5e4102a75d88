/** The error model of the contract (schemas/error.schema.json): one code, one HTTP status. */
export const ERROR_STATUS = {
  invalid_argument: 400,
  unauthorized: 401,
  forbidden: 403,
  rate_limited: 429,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** An error the client caused or may act on; its message is safe to show. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Overrides the code's default status (413 for an oversized body, 503 when the database is down). */
    readonly status: number = ERROR_STATUS[code],
    /** Response headers that go with it over HTTP (Retry-After on rate_limited). */
    readonly headers: Record<string, string> = {},
    /** The id of the event an emit_event failure is about, when the client should retry with it. */
    readonly eventId?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * Which limit refused a request (429): `key`, `workspace` and `address` the rate buckets, `held_reads` the bound
 * on long-polls and streams, `memory` the memory budget, `draining` a server shutting down, `quota`
 * a webhook endpoint's (redeliver_webhook's pending deliveries, test_webhook's cooldown). The
 * metrics count refusals by it and the request's log line names it: an operator tells a tenant
 * over its rate from a server out of room.
 */
export type LimitReason = 'key' | 'workspace' | 'address' | 'held_reads' | 'memory' | 'draining' | 'quota';

/** A 429 that says which limit refused it (LimitReason); its body is any rate_limited error's. */
export class RateLimitedError extends ApiError {
  constructor(
    readonly reason: LimitReason,
    message: string,
    headers: Record<string, string>,
  ) {
    super('rate_limited', message, 429, headers);
  }
}

/** Seconds a client is told to wait (Retry-After) before retrying after a temporary failure of the database. */
export const TEMPORARY_RETRY_AFTER_SECONDS = 2;

/**
 * A failure that is the database's and temporary (unreachable, disk full, read-only): 503 with
 * Retry-After, the contract's `internal` body, and a message that says to retry. Nothing was
 * stored unless the message says the outcome is unknown (then `eventId` names what to retry with).
 */
export class ServiceUnavailableError extends ApiError {
  constructor(message: string, eventId?: string) {
    super('internal', message, 503, { 'Retry-After': String(TEMPORARY_RETRY_AFTER_SECONDS) }, eventId);
  }
}

export const invalidArgument = (message: string) => new ApiError('invalid_argument', message);
export const forbidden = (message: string) => new ApiError('forbidden', message);
export const unauthorized = (message = 'missing or invalid API key') => new ApiError('unauthorized', message);

export interface ErrorBody {
  error: { code: ErrorCode; message: string; request_id?: string; event_id?: string };
}

/** The body a transport sends for any thrown value: client errors verbatim, anything else generic. */
export function toErrorBody(err: unknown, requestId: string): { status: number; body: ErrorBody; headers: Record<string, string> } {
  if (err instanceof ApiError) {
    const body: ErrorBody = { error: { code: err.code, message: err.message } };
    if (err.code === 'internal') body.error.request_id = requestId;
    if (err.eventId !== undefined) body.error.event_id = err.eventId;
    return { status: err.status, body, headers: err.headers };
  }
  return {
    status: 500,
    headers: {},
    body: { error: { code: 'internal', message: `internal error; quote request id ${requestId} to support`, request_id: requestId } },
  };
}
