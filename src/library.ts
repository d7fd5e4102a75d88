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
