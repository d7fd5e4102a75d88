import { existsSync } from 'node:fs';
import { DEFAULT_DATABASE_URL } from '../app/config.ts';
import { sqliteFileOf } from '../store/open-store.ts';

/** A database URL fit to print: no password, no query string (which may carry one). */
export function displayedDatabaseUrl(url: string): string {
  const file = sqliteFileOf(url);
  if (file !== undefined) return file === ':memory:' ? url : `sqlite:${file}`;
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    parsed.search = '';
    return parsed.toString();
  } catch {
    return `${url.split(':')[0]}://…`;
  }
}

/**
 * Why a command must not run on this database, if it must not: a SQLite file that does not exist
 * yet. Only `serve` and `migrate` create a database; any other command run from the wrong folder
 * (the default file is relative to it) or with a mistyped DATABASE_URL would otherwise create an
 * empty one there and work on it, as if the real one were empty.
 */
export function missingDatabaseProblem(url: string, fromEnvironment: boolean): string | undefined {
  const file = sqliteFileOf(url);
  if (file === undefined || file === ':memory:' || existsSync(file)) return undefined;
  const source = fromEnvironment
    ? 'DATABASE_URL points there'
    : `DATABASE_URL is not set: the default is ${DEFAULT_DATABASE_URL}, relative to the current folder`;
  return (
    `no database at ${file} (${source}). ` +
    'Set DATABASE_URL to the database the service uses (sqlite:/absolute/path/event-feed.sqlite or postgres://…), ' +
    'or create one with "event-feed migrate" or "event-feed serve".'
  );
}
