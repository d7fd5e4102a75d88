/**
 * Delays before each retry, after the first attempt: about three days in all (3 days 4 h without
 * jitter). Each delay is spread by ±20% so that endpoints failing together do not retry together.
 */
export const RETRY_DELAYS_SECONDS = [5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 86400];

// A Retry-After longer than this is not honoured as such: the endpoint is then retried on schedule.
const MAX_RETRY_AFTER_SECONDS = 24 * 3600;

/** When attempt number `attempt` (1-based) has failed: the delay before the next, or undefined if none is left. */
export function nextDelayMs(
  attempt: number,
  retryAfterHeader: string | undefined,
  now: number,
  random: () => number = Math.random,
): number | undefined {
  const scheduled = RETRY_DELAYS_SECONDS[attempt - 1];
  if (scheduled === undefined) return undefined;
  const jittered = Math.round(scheduled * 1000 * (0.8 + 0.4 * random()));
  const asked = retryAfterSeconds(retryAfterHeader, now);
  // Retry-After is a floor ("not before"), never a shortcut through the schedule: an endpoint answering
  // 503 with `Retry-After: 0` during a deploy must not burn its 13 attempts in seconds and lose events.
  if (asked !== undefined && asked <= MAX_RETRY_AFTER_SECONDS) return Math.max(asked * 1000, jittered);
  return jittered;
}

/** Retry-After as delay-seconds or an HTTP date. */
export function retryAfterSeconds(header: string | undefined, now: number): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
