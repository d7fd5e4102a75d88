import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import knexFactory from 'knex';
import { randomBytes } from 'node:crypto';

export interface TestDatabase {
  kind: 'sqlite' | 'postgres';
  url: string;
  drop(): Promise<void>;
}

const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';

export async function sqliteDatabase(): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'event-feed-test-'));
  return { kind: 'sqlite', url: `sqlite:${join(dir, 'feed.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

let postgresReachable: Promise<boolean> | undefined;

/** CI sets CI=true (or 1); CI=false or an empty value is a developer's machine. */
export const underCi = () => ['true', '1'].includes((process.env.CI ?? '').toLowerCase());

/**
 * `npm run test:unit` sets TEST_POSTGRES=off: the fast loop needs no database server, and leaves
 * the Postgres suites to `npm test`, which runs them on both databases.
 */
const postgresLeftOut = () => process.env.TEST_POSTGRES === 'off';

/**
 * Whether Postgres tests run: not when left out (TEST_POSTGRES=off); else always under CI (and fail
 * loudly if it is down), and only when it answers on a developer's machine.
 */
export async function postgresAvailable(): Promise<boolean> {
  postgresReachable ??= (async () => {
    if (postgresLeftOut()) {
      console.warn('\n*** TEST_POSTGRES=off (npm run test:unit): Postgres tests are SKIPPED here; npm test runs them ***\n');
      return false;
    }
    const admin = knexFactory({ client: 'pg', connection: { connectionString: ADMIN_URL, connectionTimeoutMillis: 2000 } });
    try {
      await admin.raw('select 1');
      return true;
    } catch (err) {
      if (underCi()) throw new Error(`CI=true but Postgres at ${ADMIN_URL} is unreachable: ${(err as Error).message}`);
      console.warn(`\n*** Postgres unreachable at ${ADMIN_URL}: Postgres tests are SKIPPED (they run under CI=true) ***\n`);
      return false;
    } finally {
      await admin.destroy();
    }
  })();
  return postgresReachable;
}

/** A fresh database of its own on the test Postgres server. */
export async function postgresDatabase(): Promise<TestDatabase> {
  const name = `event_feed_test_${randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: ADMIN_URL });
  await admin.raw(`create database ${name}`);
  await admin.destroy();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    kind: 'postgres',
    url: url.toString(),
    drop: async () => {
      const a = knexFactory({ client: 'pg', connection: ADMIN_URL });
      await a.raw(`drop database if exists ${name} with (force)`);
      await a.destroy();
    },
  };
}

/** Each kind the suite runs on: SQLite always, Postgres when available (always under CI). */
export async function databaseKinds(): Promise<Array<{ kind: 'sqlite' | 'postgres'; create: () => Promise<TestDatabase>; skip: boolean }>> {
  return [
    { kind: 'sqlite', create: sqliteDatabase, skip: false },
    { kind: 'postgres', create: postgresDatabase, skip: !(await postgresAvailable()) },
  ];
}
