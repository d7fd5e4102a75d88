import { createHmac, randomBytes } from 'node:crypto';

const PREFIX = 'whsec_';

/** A new signing secret in the Standard Webhooks form: `whsec_` + base64 of 24 random bytes. */
export const newSigningSecret = () => PREFIX + randomBytes(24).toString('base64');

/**
 * The Standard Webhooks signature header value: `v1,` + base64 HMAC-SHA256, keyed with the
 * secret's decoded bytes, over `<webhook-id>.<webhook-timestamp>.<body>`.
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/**
 * The `webhook-signature` header for these secrets: one `v1,` signature each, space-separated, as
 * Standard Webhooks allows (a receiver accepts the request if any one matches). The current
 * secret comes first; the previous one is there only during a rotation's grace (rotatedSecret).
 */
export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => signWebhook(secret, id, timestampSeconds, body)).join(' ');
}

export const secretHint = (secret: string) => secret.slice(-4);
