import type { Logger } from '../base/log.ts';
import type { DueDelivery, EndpointRow } from '../store/port.ts';
import type { AttemptResult } from './send.ts';

/*
 * What an operator sees of webhook failures, at `warn` so that the default level (info) shows it:
 * ids, the status or the system's error code, the attempt number and when the next one is due.
 * Never the secret, the payload, nor the URL (a URL can carry a token in its path or query).
 */

type Endpoint = Pick<EndpointRow, 'id' | 'workspace_id'>;

/** One failed attempt: `nextAttemptAt` null when none is left (the delivery is dropped, or its endpoint disabled). */
export function logFailedAttempt(
  log: Logger,
  endpoint: Endpoint,
  delivery: DueDelivery,
  result: Pick<AttemptResult, 'status' | 'error' | 'errorCode'>,
  nextAttemptAt: number | null,
): void {
  log.warn(
    {
      endpoint_id: endpoint.id,
      workspace_id: endpoint.workspace_id,
      event_id: delivery.event_id,
      attempt: delivery.attempts + 1,
      status: result.status,
      error: result.error,
      error_code: result.errorCode,
      next_retry_at: nextAttemptAt === null ? null : new Date(nextAttemptAt).toISOString(),
    },
    nextAttemptAt === null ? 'webhook attempt failed; no retry' : 'webhook attempt failed; retry scheduled',
  );
}

/** An endpoint the service disabled: logged once, by the instance whose write turned it off. */
export function logDisabledEndpoint(log: Logger, endpoint: Endpoint, reason: string): void {
  log.warn({ endpoint_id: endpoint.id, workspace_id: endpoint.workspace_id, reason }, 'webhook endpoint disabled');
}
