/**
 * A short run of the concurrency stress harness (scripts/stress/, `npm run stress` for the full one):
 *   - Postgres, real store (publishInTransaction + eventFeed), 1, 4 and 100 workspaces, 16 writers,
 *     4 full + 4 restricted readers restarting from saved cursors, rollbacks, pg_terminate_backend
 *     kills (some as COMMIT is sent) and sockets cut at COMMIT: no loss, duplicate, reorder, partial
 *     transaction, phantom, seq hole or disagreement; unknown outcomes all resolved whole.
 *   - The naive bigserial feed through the same harness must lose events (negative control).
 *   - SQLite, several writer processes (one SIGKILLed now and then) and reader processes on one file.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { naiveStore } from '../scripts/stress/naive-store.ts';
import { runPostgres } from '../scripts/stress/postgres.ts';
import { realStore } from '../scripts/stress/real-store.ts';
import { details, table, type RunResult } from '../scripts/stress/result.ts';
import { runSqlite } from '../scripts/stress/sqlite.ts';
import { postgresAvailable } from './support/databases.ts';

const pgSkip = !(await postgresAvailable()) && 'Postgres unreachable (see notice above): Postgres stress SKIPPED';

function report(t: { diagnostic(msg: string): void }, results: RunResult[]) {
  for (const line of `${table(results)}\n${results.map(details).join('\n')}`.split('\n')) t.diagnostic(line);
}

function assertClean(r: RunResult) {
  const why = details(r);
  assert.ok(r.committedTxns > 0, `${r.label}: nothing committed\n${why}`);
  for (const key of ['lost', 'duplicated', 'reordered', 'partial', 'phantom', 'holes', 'disagree'] as const) {
    assert.equal(r[key], 0, `${r.label}: ${key}\n${why}`);
  }
  assert.equal(r.unknownPresent + r.unknownAbsent, r.unknown, `${r.label}: an unknown outcome resolved neither present nor absent\n${why}`);
  assert.equal(r.verdict, 'PASS', why);
}

describe('stress: the feed under concurrent writers, readers and faults', { timeout: 180_000 }, () => {
  it(
    'postgres: 16 writers over 1, 4 and 100 workspaces with kills; readers see every committed event once, in order',
    { skip: pgSkip },
    async (t) => {
      const results: RunResult[] = [];
      for (const workspaces of [1, 4, 100]) {
        results.push(
          await runPostgres({
            label: `pg-${workspaces}ws`,
            store: realStore,
            control: false,
            seconds: 4,
            writers: 16,
            workspaces,
            fullReaders: 4,
            restrictedReaders: 4,
            kills: true,
          }),
        );
      }
      report(t, results);
      results.forEach(assertClean);
      const sum = (f: (r: RunResult) => number) => results.reduce((n, r) => n + f(r), 0);
      assert.ok(sum((r) => r.kills) >= 1, 'no writer backend was killed');
      assert.ok(sum((r) => r.commitKills + r.cuts) >= 1, 'no fault landed at COMMIT');
      assert.ok(sum((r) => r.rollbacks) >= 1, 'no transaction was rolled back');
      assert.ok(sum((r) => r.readerRestarts) >= 1, 'no reader restarted from a saved cursor');
    },
  );

  it('NEGATIVE CONTROL: the naive bigserial feed, same writers and readers, loses events', { skip: pgSkip }, async (t) => {
    const result = await runPostgres({
      label: 'naive-4ws',
      store: naiveStore,
      control: true,
      seconds: 3,
      writers: 16,
      workspaces: 4,
      fullReaders: 4,
      restrictedReaders: 4,
      kills: true,
    });
    report(t, [result]);
    assert.ok(result.lost > 0, `the harness did not catch the naive feed losing events\n${details(result)}`);
    assert.equal(result.verdict, 'PASS');
  });

  it('sqlite: writer processes (SIGKILLed now and then) and reader processes on one file', async (t) => {
    const result = await runSqlite({
      label: 'sqlite-4ws',
      seconds: 3,
      writerProcesses: 4,
      workspaces: 4,
      fullReaders: 2,
      restrictedReaders: 2,
      kills: true,
    });
    report(t, [result]);
    assertClean(result);
    assert.ok(result.kills >= 1, 'no writer process was killed');
  });
});
