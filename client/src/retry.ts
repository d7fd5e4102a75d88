import { EventFeedError } from './errors.js';

export interface RetryOptions {
  /**
   * Failed attempts in a row before the error is thrown (a success starts the count again).
   * Default 10; `Infinity` for a follower that must outlast any outage.
   */
  maxRetries?: number;
  /** The first backoff's ceiling, in ms (default 500); each retry doubles it, up to `maxDelayMs`. */
  baseDelayMs?: number;
  /** The ceiling of a backoff, in ms (default 30,000). A server's `Retry-After` is honoured above it, up to `maxRetryAfterMs`. */
  maxDelayMs?: number;
  /** The longest `Retry-After` honoured, in ms (default 300,000): a longer one is waited this long. */
  maxRetryAfterMs?: number;
  /** Called before each wait: log it, count it. */
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
}

/** Why an attempt failed, when retrying it may succeed: 429, 5xx, a network failure, a cut or unreadable answer, a timeout. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof EventFeedError) return error.retryable;
  if (!(error instanceof Error)) return false;
  // fetch's network failures are TypeErrors ("fetch failed", with the socket error as cause);
  // a body cut short fails its JSON parse; our own per-request timeout aborts with TimeoutError.
  if (error.name === 'TypeError') return error.cause !== undefined || /fetch|network|terminated|socket/i.test(error.message);
  return error.name === 'SyntaxError' || error.name === 'TimeoutError';
}

/** How long to wait before retry number `attempt` (1-based): the server's Retry-After, else full jitter. */
export function retryDelay(error: unknown, attempt: number, options: RetryOptions, random = Math.random): number {
  const { baseDelayMs = 500, maxDelayMs = 30_000, maxRetryAfterMs = 300_000 } = options;
  if (error instanceof EventFeedError && error.retryAfter !== undefined) return Math.min(error.retryAfter * 1000, maxRetryAfterMs);
  // "Full jitter": uniform between 0 and the capped exponential, so many clients failing together spread out.
  const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Runs `attempt` until it succeeds, throws an error not worth retrying, runs out of retries, or the signal aborts. */
export async function withRetry<T>(attempt: () => Promise<T>, options: RetryOptions, signal?: AbortSignal): Promise<T> {
  const maxRetries = options.maxRetries ?? 10;
  for (let failures = 0; ;) {
    try {
      return await attempt();
    } catch (error) {
      if (signal?.aborted || !isRetryable(error) || failures >= maxRetries) throw error;
      failures++;
      const delayMs = retryDelay(error, failures, options);
      options.onRetry?.({ attempt: failures, delayMs, error });
      await sleep(delayMs, signal);
    }
  }
}
