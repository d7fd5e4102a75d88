import { Webhook, WebhookVerificationError as LibraryVerificationError } from 'standardwebhooks';
import { WebhookVerificationError } from './errors.js';
import type { components } from './generated/api.js';

/** The raw body of the delivery, exactly as received (not a re-serialised object). */
export type WebhookPayload = string | Uint8Array;
/** The delivery's headers: a fetch `Headers`, or Node's `req.headers` (names in any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function headerValues(headers: WebhookHeaders): Record<string, string> {
  const get = (name: string): string | undefined => {
    if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
    const record = headers as Record<string, string | string[] | undefined>;
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    const value = key === undefined ? undefined : record[key];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const values: Record<string, string> = {};
  for (const name of HEADERS) {
    const value = get(name);
    if (value !== undefined) values[name] = value;
  }
  return values;
}

/**
 * Verifies a webhook delivery (Standard Webhooks, through the `standardwebhooks` library: the
 * HMAC-SHA256 signature over `id.timestamp.body` with the endpoint's `whsec_…` secret, and a
 * timestamp within 5 minutes of this clock) and returns the event it carries. Throws
 * WebhookVerificationError when it does not verify, or when the body is not an event of the same id.
 */
export function verifyWebhook(payload: WebhookPayload, headers: WebhookHeaders, secret: string): components['schemas']['EventEnvelope'] {
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  const values = headerValues(headers);
  let event: unknown;
  try {
    event = new Webhook(secret).verify(body, values);
  } catch (error) {
    if (error instanceof LibraryVerificationError) throw new WebhookVerificationError(error.message);
    throw error;
  }
  // The signature covers webhook-id too: the body's id must be that one (the contract says they are the same).
  if (typeof event !== 'object' || event === null || (event as { id?: unknown }).id !== values['webhook-id']) {
    throw new WebhookVerificationError('the body is not the event webhook-id names');
  }
  return event as components['schemas']['EventEnvelope'];
}
