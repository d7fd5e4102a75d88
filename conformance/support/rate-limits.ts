import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { APIRequestContext, APIResponse } from '@playwright/test';

/**
 * Every request of the kit goes through `paced`: a deployment's rate limit is a fact of life, never
 * a contract failure. A 429 is waited out (Retry-After, else RateLimit-Reset) and sent again; a
 * bucket the last answer left empty (RateLimit-Remaining) is given time before the next request.
 * The waits of the whole run are bounded by EVENT_FEED_MAX_WAIT_SECONDS: past it the request throws
 * RateLimitBudgetSpent, which the checks report as not run (skipped with the reason), never passed.
 */

const DEFAULT_MAX_WAIT_SECONDS = 120;

export function maxWaitSeconds(): number {
  const raw = process.env.EVENT_FEED_MAX_WAIT_SECONDS;
  const value = raw === undefined || raw === '' ? DEFAULT_MAX_WAIT_SECONDS : Number(raw);
  return Number.isFinite(value) && value >= 0 ? value : DEFAULT_MAX_WAIT_SECONDS;
}

export class RateLimitBudgetSpent extends Error {}

/**
 * The run's total wait lives in a file (EVENT_FEED_WAIT_LEDGER, set by the config): the reporter
 * runs in another process than the checks, Playwright starts a new worker after a failure, and the
 * bound is for the run.
 */
export function totalWaitedMs(): number {
  const ledger = process.env.EVENT_FEED_WAIT_LEDGER;
  if (!ledger) return ownWaitMs;
  try {
    return Number(readFileSync(ledger, 'utf8')) || 0;
  } catch {
    return 0;
  }
}

let ownWaitMs = 0;

function addWaited(ms: number): void {
  ownWaitMs += ms;
  const ledger = process.env.EVENT_FEED_WAIT_LEDGER;
  if (ledger) writeFileSync(ledger, String(totalWaitedMs() + ms));
}

async function wait(ms: number, why: string): Promise<void> {
  const spent = totalWaitedMs();
  const bound = maxWaitSeconds() * 1000;
  if (spent + ms > bound) {
    throw new RateLimitBudgetSpent(
      `rate limited by the deployment (${why}) after ${(spent / 1000).toFixed(1)} s of waiting in this run: ` +
        `waiting ${(ms / 1000).toFixed(2)} s more would pass EVENT_FEED_MAX_WAIT_SECONDS=${maxWaitSeconds()}; check not run`,
    );
  }
  if (ms <= 0) return;
  await sleep(ms);
  addWaited(ms);
}

interface BucketSeen {
  remaining: number;
  limit: number;
  resetSeconds: number;
  atMs: number;
}

/** What the last answer said of each bucket: one per key, one for requests without a key (paid by address). */
const buckets = new Map<string, BucketSeen>();

function headerNumber(headers: Record<string, string>, name: string): number | undefined {
  const raw = headers[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** Seconds a 429 asks for: Retry-After (seconds or an HTTP date), else RateLimit-Reset, else 1. */
export function retryAfterSeconds(headers: Record<string, string>, nowMs = Date.now()): number {
  const retryAfter = headers['retry-after'];
  if (retryAfter !== undefined) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds;
    const date = Date.parse(retryAfter);
    if (!Number.isNaN(date)) return Math.max(0, (date - nowMs) / 1000);
  }
  return headerNumber(headers, 'ratelimit-reset') ?? 1;
}

function note(bucket: string, headers: Record<string, string>): void {
  const remaining = headerNumber(headers, 'ratelimit-remaining');
  const limit = headerNumber(headers, 'ratelimit-limit');
  const resetSeconds = headerNumber(headers, 'ratelimit-reset');
  if (remaining === undefined || limit === undefined || resetSeconds === undefined) return;
  buckets.set(bucket, { remaining, limit, resetSeconds, atMs: Date.now() });
}

/**
 * Before a request: when the last answer left this bucket empty, wait about one token's refill
 * (the bucket refills `limit` tokens in `reset` seconds at most), so a steady reader runs at the
 * deployment's rate instead of bouncing off 429s.
 */
async function paceBefore(bucket: string): Promise<void> {
  const seen = buckets.get(bucket);
  if (!seen || seen.remaining >= 1 || seen.limit === 0) return;
  const oneTokenMs = (seen.resetSeconds * 1000) / seen.limit;
  const due = seen.atMs + oneTokenMs - Date.now();
  if (due > 0) await wait(due, 'RateLimit-Remaining: 0');
}

/** What pacing reads of an answer, whichever client made the request. */
interface Answer {
  status: number;
  headers: Record<string, string>;
  dispose(): Promise<void>;
}

async function pacedAnswer<R>(bucket: string, send: () => Promise<R>, answer: (response: R) => Answer): Promise<R> {
  for (;;) {
    await paceBefore(bucket);
    const response = await send();
    const { status, headers, dispose } = answer(response);
    note(bucket, headers);
    if (status !== 429) return response;
    const seconds = retryAfterSeconds(headers);
    await dispose();
    await wait(Math.ceil(seconds * 1000), `429, Retry-After ${seconds} s`);
  }
}

/** Sends a request of `bucket` (its key, or '' for none) as the deployment's limits allow. */
export function paced(bucket: string, send: () => Promise<APIResponse>): Promise<APIResponse> {
  return pacedAnswer(bucket, send, (response) => ({
    status: response.status(),
    headers: response.headers(),
    dispose: () => response.dispose(),
  }));
}

/**
 * The same for a request Playwright's context cannot make (an event stream, read as it comes: raw
 * `fetch`), `bucket` being its Authorization header's value. A spent wait bound throws
 * RateLimitBudgetSpent, which the check turns into a skip (see readStream).
 */
export function pacedFetch(bucket: string, send: () => Promise<Response>): Promise<Response> {
  return pacedAnswer(bucket, send, (response) => ({
    status: response.status,
    headers: Object.fromEntries([...response.headers].map(([name, value]) => [name.toLowerCase(), value])),
    dispose: async () => void (await response.body?.cancel().catch(() => undefined)),
  }));
}

type Options = { headers?: Record<string, string> } | undefined;

const bucketOf = (options: Options): string => {
  const headers = options?.headers ?? {};
  const auth = Object.entries(headers).find(([name]) => name.toLowerCase() === 'authorization');
  return auth?.[1] ?? '';
};

const METHODS = new Set(['fetch', 'get', 'post', 'put', 'patch', 'delete', 'head']);

/**
 * The same request context, with every request paced. `onSpent` decides what a spent wait budget
 * becomes: inside a check, a skip with the reason (see the kit's `test`).
 */
export function pacedContext(
  context: APIRequestContext,
  onSpent: (error: RateLimitBudgetSpent) => never = (e) => {
    throw e;
  },
): APIRequestContext {
  return new Proxy(context, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || !METHODS.has(property) || typeof value !== 'function')
        return typeof value === 'function' ? value.bind(target) : value;
      return async (url: unknown, options: Options) => {
        try {
          return await paced(bucketOf(options), () => value.call(target, url, options));
        } catch (error) {
          if (error instanceof RateLimitBudgetSpent) onSpent(error);
          throw error;
        }
      };
    },
  });
}
