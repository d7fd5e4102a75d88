import type { EndpointRow } from '../store/port.ts';
import { newSigningSecret } from './signature.ts';

/** How long the replaced secret keeps signing when the caller does not say (Standard Webhooks' usual day). */
export const DEFAULT_ROTATION_GRACE_SECONDS = 24 * 3600;
/** The longest grace a rotation may give the replaced secret (rotate_secret's `grace_seconds` bound). */
export const MAX_ROTATION_GRACE_SECONDS = 7 * 24 * 3600;

/**
 * The row changes of a secret rotation: a new secret, and the current one kept as the previous
 * secret until `now + graceSeconds` (none with a grace of 0: the old secret stops at once, as
 * after a leak). Only two secrets ever sign: a rotation during another's grace ends that grace.
 */
export function rotatedSecret(
  endpoint: Pick<EndpointRow, 'secret'>,
  now: number,
  graceSeconds: number,
): Pick<EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'> {
  const keep = graceSeconds > 0;
  return {
    secret: newSigningSecret(),
    previous_secret: keep ? endpoint.secret : null,
    previous_secret_expires_at: keep ? now + graceSeconds * 1000 : null,
  };
}

/** The secrets that sign a request sent at `now`: the current one, then the previous while its grace lasts. */
export function signingSecrets(
  endpoint: Pick<EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>,
  now: number,
): string[] {
  const { secret, previous_secret: previous, previous_secret_expires_at: until } = endpoint;
  return previous !== null && until !== null && Number(until) > now ? [secret, previous] : [secret];
}
