/**
 * In-process API for the mail service's own code: publish events inside its own knex transaction
 * (a transactional outbox: the events commit or vanish with its writes), through the same append
 * path and the same contract validation as `POST /v1/emit_event`.
 */
import type { Knex } from 'knex';
import type { EmitEventRequest } from '../generated/types.ts';
import { systemClock, type Clock } from './clock.ts';
import { RequestValidator } from './contract/request-validator.ts';
import { ApiError, invalidArgument } from './errors.ts';
import { publishInTransaction, type PublishedEvent } from './feed/publish.ts';

export type { EmitEventRequest, PublishedEvent };
export { ApiError };
export { openDatabase } from './store/db.ts';
export { migrateLatest } from './store/migrate.ts';

let validator: RequestValidator | undefined;

/**
 * Publishes `events` to a workspace's feed inside the caller's transaction `trx`; they commit or
 * vanish with it. From this call until the transaction ends, the workspace's counter row is
 * locked: `emit_event` calls into that workspace wait for it (up to the lock timeout, 3 s, then
 * they fail with "not stored") while other workspaces are not held back. So publish last and
 * commit soon after. Publishing to several workspaces in one transaction: in sorted workspace
 * order (the order every writer locks them in).
 */
export async function publish(
  trx: Knex.Transaction,
  workspaceId: string,
  events: unknown[],
  clock: Clock = systemClock,
): Promise<PublishedEvent[]> {
  validator ??= new RequestValidator();
  const inputs = events.map((event, i) => {
    try {
      return validator!.check<EmitEventRequest>('emit_event', event);
    } catch (err) {
      throw err instanceof ApiError ? invalidArgument(`events[${i}]: ${err.message}`) : err;
    }
  });
  return publishInTransaction(trx, workspaceId, inputs, clock.now());
}
