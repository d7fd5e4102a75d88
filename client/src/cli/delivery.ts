import { randomBytes } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Webhook } from 'standardwebhooks';
import { deliveryUserAgent } from '../generated/webhook-samples.js';

/** The Standard Webhooks secret form: `whsec_` and the key's bytes in base64. */
const SECRET = /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$/;

export const isSigningSecret = (value: string) => SECRET.test(value);

/** A new secret like the service's (`set_webhook`): `whsec_` and 24 random bytes in base64. */
export const newSigningSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** One `v1,` signature of a delivery (Standard Webhooks: HMAC-SHA256 over `id.timestamp.body`), by the `standardwebhooks` library. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  return new Webhook(secret).sign(id, new Date(timestampSeconds * 1000), body);
}

/**
 * The headers the service's webhooks send (the contract's `event` webhook): the body's type, the
 * user agent, the event's id, the time of this attempt and its signature (one per secret,
 * space-separated, as during a rotation).
 */
export function deliveryHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': deliveryUserAgent,
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((secret) => signature(secret, id, timestampSeconds, body)).join(' '),
  };
}

export interface PostResult {
  /** The receiver's status, or null when it gave none (connection failure, timeout). */
  status: number | null;
  latencyMs: number;
  /** Why there is no status, in a few words (`connection refused`, `timed out after 10 s`). */
  error: string | null;
  /** The receiver's `Retry-After`, in seconds, when it gave one as a number. */
  retryAfterSeconds: number | undefined;
}

export const acknowledged = (result: PostResult) => result.status !== null && result.status >= 200 && result.status < 300;

// The answer's body only frees the connection: read up to this much, like the service's sender.
const ANSWER_CAP = 64 * 1024;

/**
 * POSTs one delivery and waits for the answer's status, within `timeoutMs`, or until `signal`
 * aborts. A connection of its own each time (no keep-alive): a receiver restarted between two
 * deliveries, or one closing idle sockets, never makes a delivery fail on a stale connection.
 * Redirects are not followed (a 3xx is an answer, as for the service).
 */
export function postDelivery(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const bytes = Buffer.from(body, 'utf8');
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: Omit<PostResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      req.destroy();
      resolve({ ...result, latencyMs: elapsed() });
    };
    const send = new URL(url).protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      { method: 'POST', agent: false, headers: { ...headers, 'content-length': String(bytes.length) } },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? null;
        const retryAfter = Number(res.headers['retry-after']);
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > ANSWER_CAP) done();
        });
        const done = () =>
          finish({ status, error: null, retryAfterSeconds: Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined });
        res.on('end', done);
        res.on('error', done);
        res.on('close', done);
      },
    );
    const timer = setTimeout(
      () => finish({ status: null, error: `timed out after ${timeoutMs / 1000} s`, retryAfterSeconds: undefined }),
      timeoutMs,
    );
    const onAbort = () => finish({ status: null, error: 'aborted', retryAfterSeconds: undefined });
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) => finish({ status: null, error: describe(error), retryAfterSeconds: undefined }));
    req.end(bytes);
  });
}

const FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

function describe(error: unknown): string {
  const code = (error as { code?: string }).code;
  if (code && FAILURES[code]) return FAILURES[code];
  if (code && /CERT|TLS|SSL/.test(code)) return `TLS handshake failed (${code})`;
  return code ? `request failed (${code})` : `request failed (${(error as Error).message})`;
}
