import type { WebhookEndpoint } from '../../generated/types.ts';
import type { EndpointRow } from '../store/port.ts';
import { secretHint } from './signature.ts';

const iso = (ms: number | string) => new Date(Number(ms)).toISOString();

/** The contract's view of an endpoint; the secret in full only when asked (creation, rotation). */
export function endpointView(row: EndpointRow, withSecret = false): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    event_types: JSON.parse(row.event_types) as WebhookEndpoint['event_types'],
    enabled: Boolean(row.enabled),
    disabled_reason: row.disabled_reason,
    ...(withSecret ? { secret: row.secret } : {}),
    secret_hint: secretHint(row.secret),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
