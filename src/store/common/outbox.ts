import { matchesTypes } from '../../contract/type-filter.ts';
import type { EndpointRow } from '../port.ts';

/** A webhook delivery written with the event it delivers, in the same transaction (the outbox). */
export interface OutboxRow {
  endpointId: string;
  workspaceId: string;
  eventId: string;
}

/**
 * The deliveries these new events owe, one per (enabled endpoint of their workspace, matching
 * event): the outbox rows appendEvents writes with the events on SQLite, so an event is delivered
 * if and only if it is in the feed. (On Postgres the append statement applies the same rule in
 * SQL: appendOnPostgres.)
 */
export function deliveriesOwed(
  endpoints: Array<Pick<EndpointRow, 'id' | 'workspace_id' | 'event_types'>>,
  events: Array<{ workspaceId: string; id: string; type: string }>,
): OutboxRow[] {
  return endpoints.flatMap((endpoint) => {
    const types = JSON.parse(endpoint.event_types) as string[];
    return events
      .filter((event) => event.workspaceId === endpoint.workspace_id && matchesTypes(types, event.type))
      .map((event) => ({ endpointId: endpoint.id, workspaceId: endpoint.workspace_id, eventId: event.id }));
  });
}
