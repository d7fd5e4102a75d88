import type { components } from './generated/api.js';

/** The body of every error answer, as the contract describes it. */
export type ErrorBody = components['schemas']['Error'];
/** The contract's error codes: `unauthorized`, `forbidden`, `invalid_argument`, `rate_limited`, `internal`. */
export type ErrorCode = ErrorBody['error']['code'];

const CODES: readonly ErrorCode[] = ['unauthorized', 'forbidden', 'invalid_argument', 'rate_limited', 'internal'];

/**
 * An error answer of the service. `code` is the contract's; `status` the HTTP status. An answer
 * that is not the contract's error body (a proxy's 502 page, say) gets the code its status means:
 * 401 unauthorized, 403 forbidden, 429 rate_limited, 5xx internal, any other invalid_argument.
 * Each code has its subclass (`UnauthorizedError`…), so `instanceof` or `switch (err.code)` both work.
 */
export class EventFeedError extends Error {
  override name = 'EventFeedError';
  readonly code: ErrorCode;
  readonly status: number;
  /** The request's id (`X-Request-Id`, or `request_id` in the body): quote it to support. */
  readonly requestId: string | undefined;
  /** Seconds the server asked to wait before trying again (`Retry-After`), when it said. */
  readonly retryAfter: number | undefined;
  /** On an `internal` error of `emit_event` whose outcome is unknown: the id to send the event again with. */
  readonly eventId: string | undefined;

  constructor(init: { code: ErrorCode; status: number; message: string; requestId?: string; retryAfter?: number; eventId?: string }) {
    super(init.message);
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.eventId = init.eventId;
  }

  /** Whether waiting and sending the same request again may succeed (429 and 5xx). */
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

export class UnauthorizedError extends EventFeedError {
  override name = 'UnauthorizedError';
  declare readonly code: 'unauthorized';
}
export class ForbiddenError extends EventFeedError {
  override name = 'ForbiddenError';
  declare readonly code: 'forbidden';
}
export class InvalidArgumentError extends EventFeedError {
  override name = 'InvalidArgumentError';
  declare readonly code: 'invalid_argument';
}
export class RateLimitedError extends EventFeedError {
  override name = 'RateLimitedError';
  declare readonly code: 'rate_limited';
}
export class InternalError extends EventFeedError {
  override name = 'InternalError';
  declare readonly code: 'internal';
}

const SUBCLASS: Record<ErrorCode, typeof EventFeedError> = {
  unauthorized: UnauthorizedError,
  forbidden: ForbiddenError,
  invalid_argument: InvalidArgumentError,
  rate_limited: RateLimitedError,
  internal: InternalError,
};

/** A webhook delivery whose signature, timestamp or headers do not verify. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
}

/** `Retry-After` in seconds (a number of seconds or an HTTP date), or undefined. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

const codeOfStatus = (status: number): ErrorCode =>
  status === 401
    ? 'unauthorized'
    : status === 403
      ? 'forbidden'
      : status === 429
        ? 'rate_limited'
        : status >= 500
          ? 'internal'
          : 'invalid_argument';

/** The typed error for a non-2xx answer, from its body (already parsed by openapi-fetch, or text) and headers. */
export function errorOfResponse(response: Response, body: unknown): EventFeedError {
  const error = typeof body === 'object' && body !== null ? (body as Partial<ErrorBody>).error : undefined;
  const known = error && CODES.includes(error.code) ? error : undefined;
  const code = known?.code ?? codeOfStatus(response.status);
  const message = known?.message ?? `HTTP ${response.status}${typeof body === 'string' && body ? `: ${body.slice(0, 200)}` : ''}`;
  const Subclass = SUBCLASS[code];
  return new Subclass({
    code,
    status: response.status,
    message,
    requestId: known?.request_id ?? response.headers.get('x-request-id') ?? undefined,
    retryAfter: parseRetryAfter(response.headers.get('retry-after')),
    eventId: known?.event_id,
  });
}
