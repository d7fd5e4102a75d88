import type { ErrorCode } from './api-types.ts';

/**
 * What went wrong with a call: the contract's error code, `not_found` (an operation this deployment
 * does not have), `network`, `aborted`, or `no_head` (the head of the feed could not be found).
 */
export type FeedErrorKind = ErrorCode | 'not_found' | 'network' | 'aborted' | 'no_head';

export interface FeedErrorInfo {
  status?: number;
  code?: string;
  message?: string;
  retryAfter?: number;
  requestId?: string;
}

export class FeedError extends Error {
  readonly kind: FeedErrorKind;
  readonly status: number;
  readonly code: string;
  /** The service's own message, in English: never shown alone (frenchError). */
  readonly serverMessage: string;
  /** Seconds to wait before retrying (Retry-After), at least 1. */
  readonly retryAfter: number;
  readonly requestId: string;

  constructor(kind: FeedErrorKind, { status = 0, code = '', message = '', retryAfter = 0, requestId = '' }: FeedErrorInfo = {}) {
    super(kind);
    this.kind = kind;
    this.status = status;
    this.code = code;
    this.serverMessage = message;
    this.retryAfter = retryAfter;
    this.requestId = requestId;
  }
}

/** An answer that is not what the contract says: reported as the service's fault. */
export function malformed(): FeedError {
  return new FeedError('internal', { message: '' });
}
