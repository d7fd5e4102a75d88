/**
 * In-process API for the mail service's own code: publish events inside its own knex transaction
 * (a transactional outbox: the events commit or vanish with its writes), through the same append
 * path and the same contract validation as `POST /v1/emit_event`.
 *
 * The package's entry point (package.json `exports`, compiled to dist/src/library.js with its
 * declarations). Its signatures name only knex's types and small types of this package, so the
 * declarations a user's TypeScript loads stop here instead of reaching the store's internals
 * (and the types of better-sqlite3, which a user need not install).
 */
import type { Knex } from 'knex';
import type { EmitEventRequest } from '../generated/types.ts';
import { systemClock, type Clock } from './base/clock.ts';
import { RequestValidator } from './contract/request-validator.ts';
import { ApiError, invalidArgument } from './base/errors.ts';
import { publishInTransaction } from './feed/publish.ts';
import type { PublishedEvent } from './feed/published-event.ts';
import { migrateKnex, openStore } from './store/open-store.ts';

export type { Clock, EmitEventRequest, PublishedEvent };
export { ApiError };

/**
 * A knex instance for a database URL, as the service opens it (`sqlite:<path>` or
 * `postgres://…`: the DATABASE_URL forms of docs/configuration.md). Close it with `destroy()`.
 */
export function openDatabase(url: string): Knex {
  return openStore(url).knex;
}

/** Applies the service's pending migrations to the database; returns the names applied. */
export function migrateLatest(db: Knex): Promise<string[]> {
  return migrateKnex(db);
}

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
      return validator!.check('emit_event', event);
    } catch (err) {
      throw err instanceof ApiError ? invalidArgument(`events[${i}]: ${err.message}`) : err;
    }
  });
  return publishInTransaction(trx, workspaceId, inputs, clock.now());
}
