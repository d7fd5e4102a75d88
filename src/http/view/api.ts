// The API, as any client calls it: POST /v1/<operation> with the key as a bearer, typed by the
// contract (RequestOf, ResponseOf). Errors become FeedErrors; a 429 is waited out a few times.
import { clearAlert, showAlert } from './alerts.ts';
import type { ErrorBody, RequestOf, ResponseOf, ViewOperation } from './api-types.ts';
import { FeedError } from './feed-error.ts';
import { currentKey } from './key-storage.ts';
import { MAX_RATE_RETRIES, REQUEST_TIMEOUT_MS } from './limits.ts';
import { MSG } from './messages.ts';
import { sleep } from './sleep.ts';
import { state } from './state.ts';

export interface CallOptions {
  /** Aborts the call (default: the end of the key's session). */
  signal?: AbortSignal;
  /** Asks the service to hold the read this many seconds (Prefer: wait=N). */
  wait?: number;
  timeoutMs?: number;
}

export interface CallResult<Op extends ViewOperation> {
  /** The answer's JSON, as the contract types it (callers still check its shape: isFeedPage, isListPage). */
  payload: ResponseOf<Op>;
  /** Whether the service may have held the read (Preference-Applied: wait=N). */
  longPoll: boolean;
}

/** Seconds to wait from a Retry-After (seconds or a date), between 1 and 3600; 1 without one. */
function parseRetryAfter(value: string | null): number {
  if (!value) return 1;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.min(3600, Math.max(1, Math.ceil(seconds)));
  const date = Date.parse(value);
  return Number.isNaN(date) ? 1 : Math.min(3600, Math.max(1, Math.ceil((date - Date.now()) / 1000)));
}

/**
 * One POST /v1/<operation>. Returns the JSON body and whether the service held the read
 * (Preference-Applied); throws a FeedError whose kind is the contract's error code, `not_found`
 * (an operation this deployment does not have), `network` or `aborted`.
 */
export async function call<Op extends ViewOperation>(
  operation: Op,
  body: RequestOf<Op>,
  { signal = state.session.signal, wait, timeoutMs = REQUEST_TIMEOUT_MS }: CallOptions = {},
): Promise<CallResult<Op>> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  if (signal.aborted) throw new FeedError('aborted');
  signal.addEventListener('abort', abort, { once: true });
  const timer = setTimeout(abort, timeoutMs);
  const headers: Record<string, string> = {
    Authorization: `Bearer ${currentKey()}`,
    'Content-Type': 'application/json',
    Accept: 'application/json',
  };
  if (wait) headers.Prefer = `wait=${wait}`;
  try {
    let response: Response;
    try {
      response = await fetch(`/v1/${operation}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        cache: 'no-store',
        credentials: 'omit',
        signal: controller.signal,
      });
    } catch {
      throw new FeedError(signal.aborted ? 'aborted' : 'network');
    }
    let payload: unknown = null;
    try {
      payload = await response.json();
    } catch {
      if (signal.aborted) throw new FeedError('aborted');
      payload = null;
    }
    if (response.ok && payload && typeof payload === 'object') {
      return { payload: payload as ResponseOf<Op>, longPoll: /\bwait\s*=/i.test(response.headers.get('Preference-Applied') ?? '') };
    }
    const error: Partial<Record<keyof ErrorBody['error'], unknown>> = (payload as Partial<ErrorBody> | null)?.error ?? {};
    const info = {
      status: response.status,
      code: String(error.code ?? ''),
      message: String(error.message ?? ''),
      requestId: String(error.request_id ?? response.headers.get('X-Request-Id') ?? ''),
      retryAfter: parseRetryAfter(response.headers.get('Retry-After')),
    };
    if (response.status === 404) throw new FeedError('not_found', info);
    if (response.status === 401) throw new FeedError('unauthorized', info);
    if (response.status === 403) throw new FeedError('forbidden', info);
    if (response.status === 429) throw new FeedError('rate_limited', info);
    if (response.status >= 400 && response.status < 500) throw new FeedError('invalid_argument', info);
    throw new FeedError('internal', info);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', abort);
  }
}

/** call(), waiting out a 429 (Retry-After, said in French) a few times before giving up. */
export async function request<Op extends ViewOperation>(
  operation: Op,
  body: RequestOf<Op>,
  options: CallOptions = {},
): Promise<CallResult<Op>> {
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await call(operation, body, options);
      if (attempt > 0) clearAlert();
      return result;
    } catch (err) {
      if (!(err instanceof FeedError) || err.kind !== 'rate_limited' || attempt >= MAX_RATE_RETRIES) throw err;
      showAlert(MSG.rateLimited(err.retryAfter));
      const signal = options.signal ?? state.session.signal;
      await sleep(err.retryAfter * 1000, signal);
      if (signal.aborted) throw new FeedError('aborted');
    }
  }
}
