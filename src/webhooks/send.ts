import { Agent, request } from 'undici';
import { signWebhook } from './signature.ts';
import { safeLookup, UNREACHABLE_TARGET, urlProblem, type TargetPolicy } from './target-policy.ts';

export interface Delivery {
  url: string;
  secret: string;
  eventId: string;
  /** The envelope exactly as stored and as the feed serves it: these bytes are signed and sent. */
  body: string;
}

export interface AttemptResult {
  status: number | null;
  latencyMs: number;
  error: string | null;
  retryAfter: string | undefined;
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
    this.#agent = new Agent({ connect: { lookup: safeLookup(policy), timeout: timeoutMs }, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  async send(delivery: Delivery, nowSeconds: number): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const problem = urlProblem(delivery.url, this.policy);
    if (problem) return { status: null, latencyMs: 0, error: problem, retryAfter: undefined };
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
          'webhook-signature': signWebhook(delivery.secret, delivery.eventId, nowSeconds, delivery.body),
        },
        body: delivery.body,
      });
      await drain(response.body);
      const retryAfter = response.headers['retry-after'];
      const status = response.statusCode;
      const error = status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? `answered ${status}: redirects are not followed` : `answered ${status}`;
      return { status, latencyMs: elapsed(), error, retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
    } catch (err) {
      return { status: null, latencyMs: elapsed(), error: describe(err), retryAfter: undefined };
    }
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

async function drain(body: AsyncIterable<Buffer> & { destroy(): void }) {
  let read = 0;
  for await (const chunk of body) {
    read += chunk.length;
    if (read > RESPONSE_BODY_CAP) {
      body.destroy();
      return;
    }
  }
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

function describe(err: unknown): string {
  const e = err as { name?: string; code?: string; cause?: { code?: string } };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timed out';
  const code = e.cause?.code ?? e.code;
  if (code === undefined) return 'request failed';
  if (FAILURES[code]) return FAILURES[code];
  if (/CERT|TLS|SSL/.test(code)) return `TLS handshake failed (${code})`.slice(0, 300);
  return /^[A-Z0-9_]{1,60}$/.test(code) ? `request failed (${code})` : 'request failed';
}
