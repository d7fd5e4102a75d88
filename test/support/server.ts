import { createKey, revokeKey } from '../../src/auth/api-keys.ts';
import type { Permission } from '../../src/auth/principal.ts';
import { loadConfig } from '../../src/app/config.ts';
import type { Clock } from '../../src/base/clock.ts';
import { createLogger, type Logger } from '../../src/base/log.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import type { Knex } from 'knex';
import { openStore, type OpenedStore } from '../../src/store/open-store.ts';
import type { Store } from '../../src/store/port.ts';
import type { TestDatabase } from './databases.ts';

export interface TestServer extends RunningServer {
  /** A second handle on the same database, for provisioning and for looking behind the API. */
  store: Store;
  /** The same handle's knex, for SQL that looks behind the API. */
  db: Knex;
  database: TestDatabase;
  workspace(options?: { verified?: boolean; name?: string }): Promise<string>;
  key(workspaceId: string, permissions: Permission[], mailboxes?: string[] | null): Promise<{ id: string; key: string }>;
  /** Revokes a key in the database, behind the API (as keys are provisioned); false when no active key has this id. */
  revokeKey(keyId: string): Promise<boolean>;
  post(
    path: string,
    body: unknown,
    key?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; headers: Headers; text: string; json: any }>;
  stop(): Promise<void>;
}

/**
 * The real server on port 0 over a test database. Rate limiting is off unless `env` sets it:
 * suites send hundreds of requests per key; test/rate-limit.test.ts covers the limiter. So is
 * scheduled pruning: its first run, 1 s after start, took a connection in the middle of tests that
 * count them; test/retention.test.ts covers the schedule.
 */
/** The knex handle of the server's own store (its pool, its read connection), for tests that watch what it runs. */
export const serverKnex = (server: { services: { store: Store } }): Knex => (server.services.store as OpenedStore).knex;

export async function startTestServer(
  database: TestDatabase,
  env: Record<string, string> = {},
  options: { clock?: Clock; log?: Logger } = {},
): Promise<TestServer> {
  const config = loadConfig({
    DATABASE_URL: database.url,
    PORT: '0',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_SECOND: '0',
    PRUNE_INTERVAL_SECONDS: '0',
    ...env,
  });
  const running = await startServer(config, options.log ?? createLogger('silent'), { clock: options.clock });
  const store = openStore(database.url);
  const db = store.knex;
  return {
    ...running,
    store,
    db,
    database,
    workspace: async (options = {}) =>
      (await store.createWorkspace(options.name ?? 'Test workspace', options.verified ?? false, Date.now())).id,
    key: (workspaceId, permissions, mailboxes = null) => createKey(store, { workspaceId, permissions, mailboxes }, Date.now()),
    revokeKey: (keyId) => revokeKey(store, keyId, Date.now()),
    post: async (path, body, key, headers = {}) => {
      const response = await fetch(running.url + path, {
        method: 'POST',
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await response.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.status, headers: response.headers, text, json };
    },
    stop: async () => {
      await running.close();
      await store.close();
    },
  };
}
