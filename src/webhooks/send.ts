import { Agent, request } from 'undici';
import { signatureHeader } from './signature.ts';
import { safeLookup, UNREACHABLE_TARGET, urlProblem, type TargetPolicy } from '../net/target-policy.ts';

export interface Delivery {
  url: string;
  /** The secrets that sign it, current first (signingSecrets): one `v1,` signature each. */
  secrets: readonly string[];
  eventId: string;
  /** The envelope exactly as stored and as the feed serves it: these bytes are signed and sent. */
  body: string;
  /** Trace headers of the attempt's span (`traceparent`) while tracing is on, sent with it. */
  traceHeaders?: Record<string, string>;
}

export interface AttemptResult {
  status: number | null;
  latencyMs: number;
  error: string | null;
  /**
   * For operators' logs only, never stored or shown to a workspace: the cause of a failure without
   * an answer as the system named it (ENOTFOUND, ECONNREFUSED, timeout, a TLS code…), which
   * `error` words on purpose so that it cannot map a network.
   */
  errorCode: string | null;
  retryAfter: string | undefined;
  /** The answer's first bytes as text, when asked for (test_webhook). */
  answer?: { text: string; truncated: boolean };
}

export interface SendOptions {
  /** Keep this many of the answer's first bytes (as text in `answer`) instead of dropping them. */
  keepAnswerBytes?: number;
}

// Only the status matters; a body is read to free the connection, up to this much.
const RESPONSE_BODY_CAP = 64 * 1024;

/** Sends webhook attempts: one keep-alive agent whose every connection passes the address policy. */
export class WebhookSender {
  readonly #agent: Agent;

  constructor(
    readonly policy: TargetPolicy,
    readonly timeoutMs: number,
  ) {
    this.#agent = new Agent({
      connect: { lookup: safeLookup(policy), timeout: timeoutMs },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  }

  async send(delivery: Delivery, nowSeconds: number, options: SendOptions = {}): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const problem = urlProblem(delivery.url, this.policy);
    if (problem) return { status: null, latencyMs: 0, error: problem, errorCode: 'refused by the target policy', retryAfter: undefined };
    try {
      // undici's request() never follows redirects (that takes an explicit interceptor): a 3xx is an answer.
      const response = await request(delivery.url, {
        method: 'POST',
        dispatcher: this.#agent,
        signal: AbortSignal.timeout(this.timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'event-feed-webhooks/1',
          'webhook-id': delivery.eventId,
          'webhook-timestamp': String(nowSeconds),
          'webhook-signature': signatureHeader(delivery.secrets, delivery.eventId, nowSeconds, delivery.body),
          ...delivery.traceHeaders,
        },
        body: delivery.body,
      });
      const kept = await drain(response.body, options.keepAnswerBytes ?? 0);
      const retryAfter = response.headers['retry-after'];
      const status = response.statusCode;
      const error =
        status >= 200 && status < 300
          ? null
          : status >= 300 && status < 400
            ? `answered ${status}: redirects are not followed`
            : `answered ${status}`;
      return {
        status,
        latencyMs: elapsed(),
        error,
        errorCode: null,
        retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
        ...(options.keepAnswerBytes !== undefined ? { answer: answerText(kept, options.keepAnswerBytes) } : {}),
      };
    } catch (err) {
      return { status: null, latencyMs: elapsed(), error: describe(err), errorCode: causeCode(err), retryAfter: undefined };
    }
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

/** Reads the answer to free the connection, up to the cap; returns its first `keep` bytes (and one more, to tell it was cut). */
async function drain(body: AsyncIterable<Buffer> & { destroy(): void }, keep: number): Promise<Buffer> {
  const kept: Buffer[] = [];
  let read = 0;
  for await (const chunk of body) {
    if (keep > 0 && read <= keep) kept.push(chunk.subarray(0, keep + 1 - read));
    read += chunk.length;
    if (read > RESPONSE_BODY_CAP) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(kept);
}

/**
 * The first `max` bytes of an answer as text: decoded as UTF-8 in streaming mode, so that a
 * character cut at the limit is dropped rather than turned into a replacement character (bytes
 * that are not UTF-8 at all still become U+FFFD: it is text for a person to read).
 */
function answerText(bytes: Buffer, max: number): { text: string; truncated: boolean } {
  return { text: new TextDecoder('utf-8').decode(bytes.subarray(0, max), { stream: true }), truncated: bytes.length > max };
}

// What an attempt records for a failure without an answer: fixed words per cause, never the
// driver's message, which can carry the host name, an address or a certificate's names.
const FAILURES: Record<string, string> = {
  EUNREACHABLETARGET: UNREACHABLE_TARGET,
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  UND_ERR_SOCKET: 'connection closed before the answer',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'timed out',
  UND_ERR_HEADERS_TIMEOUT: 'timed out',
  UND_ERR_BODY_TIMEOUT: 'timed out',
};

/** The system's name for a failure without an answer, for operators' logs (a short code, never a message). */
function causeCode(err: unknown): string {
  const e = err as { name?: string; code?: string; reason?: string; cause?: { code?: string; reason?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timeout';
  const code = e.cause?.code ?? e.code;
  // A target refused by the policy carries the lookup's own failure (ENOTFOUND…) or "non-public address".
  const reason = e.cause?.reason ?? e.reason;
  const named = code === 'EUNREACHABLETARGET' && reason ? reason : code;
  return named !== undefined && /^[A-Za-z0-9_ -]{1,60}$/.test(named) ? named : 'unknown';
}

function describe(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timed out';
  const code = e.cause?.code ?? e.code;
  if (code === undefined) return 'request failed';
  if (FAILURES[code]) return FAILURES[code];
  if (/CERT|TLS|SSL/.test(code)) return `TLS handshake failed (${code})`.slice(0, 300);
  return /^[A-Z0-9_]{1,60}$/.test(code) ? `request failed (${code})` : 'request failed';
}
