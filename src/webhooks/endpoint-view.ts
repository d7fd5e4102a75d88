import type { WebhookEndpoint } from '../../generated/types.ts';
import type { EndpointRow } from '../store/port.ts';
import { signingSecrets } from './rotation.ts';
import { secretHint } from './signature.ts';

const iso = (ms: number | string) => new Date(Number(ms)).toISOString();

/**
 * The contract's view of an endpoint at `now`; the secret in full only when asked (creation,
 * rotation). The previous secret shows (by its hint and end) only while it still signs.
 */
export function endpointView(row: EndpointRow, now: number, withSecret = false): WebhookEndpoint {
  const previous = signingSecrets(row, now)[1];
  return {
    id: row.id,
    url: row.url,
    event_types: JSON.parse(row.event_types) as WebhookEndpoint['event_types'],
    enabled: row.enabled,
    disabled_reason: row.disabled_reason,
    disabled_at: row.disabled_at === null || !row.disabled_reason ? null : iso(row.disabled_at),
    ...(withSecret ? { secret: row.secret } : {}),
    secret_hint: secretHint(row.secret),
    previous_secret_hint: previous === undefined ? null : secretHint(previous),
    previous_secret_expires_at: previous === undefined ? null : iso(row.previous_secret_expires_at!),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
