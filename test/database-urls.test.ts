/**
 * Which database a URL names is asked of the store (openStore's kinds: kindOfUrl,
 * servesReadReplicas), never read off the URL elsewhere: the configuration's DATABASE_READ_URLS
 * check, and DATABASE_URL's own.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/app/config.ts';
import { checkDatabaseUrl, kindOfUrl, servesReadReplicas, sqliteFileOf } from '../src/store/open-store.ts';

const PRIMARY = 'postgres://feed@db.example:5432/feed';

describe('database URLs', () => {
  it('name their kind by scheme, whatever its case', () => {
    assert.deepEqual(
      ['sqlite:data/x.sqlite', 'sqlite::memory:', PRIMARY, 'postgresql://h/d', 'POSTGRES://h/d', 'mysql://h/d', 'data/x.sqlite'].map(
        (url) => kindOfUrl(url)?.name,
      ),
      ['sqlite', 'sqlite', 'postgres', 'postgres', 'postgres', undefined, undefined],
    );
    assert.equal(sqliteFileOf('sqlite::memory:'), ':memory:');
    assert.equal(sqliteFileOf(PRIMARY), undefined);
  });

  it('are refused when no kind takes them, with the forms every kind takes', () => {
    assert.throws(() => checkDatabaseUrl('mysql://h/d'), {
      message: 'DATABASE_URL must start with "sqlite:" or "postgres://" (got scheme "mysql")',
    });
    assert.throws(() => checkDatabaseUrl('postgres:h/d'), /DATABASE_URL must start with/);
    assert.doesNotThrow(() => checkDatabaseUrl('sqlite:data/x.sqlite'));
  });

  it('may have read replicas only where the kind says so (Postgres)', () => {
    assert.deepEqual([PRIMARY, 'postgresql://h/d', 'postgres:h/d', 'sqlite:data/x.sqlite', 'mysql://h/d'].map(servesReadReplicas), [
      true,
      true,
      false,
      false,
      false,
    ]);
  });

  it('DATABASE_READ_URLS: Postgres replicas of a Postgres primary', () => {
    const config = (env: Record<string, string>) => loadConfig({ LOG_LEVEL: 'silent', ...env });
    assert.deepEqual(config({ DATABASE_URL: PRIMARY, DATABASE_READ_URLS: 'postgres://r1/feed, postgresql://r2/feed' }).databaseReadUrls, [
      'postgres://r1/feed',
      'postgresql://r2/feed',
    ]);
    assert.throws(
      () => config({ DATABASE_URL: PRIMARY, DATABASE_READ_URLS: 'postgres://r1/feed,sqlite:replica.sqlite' }),
      (err) => err instanceof ConfigError && /entry 2 is not a postgres:\/\/ URL/.test(err.message),
    );
    assert.throws(
      () => config({ DATABASE_URL: 'sqlite:data/x.sqlite', DATABASE_READ_URLS: 'postgres://r1/feed' }),
      (err) => err instanceof ConfigError && /set DATABASE_URL to its primary/.test(err.message),
    );
  });
});
