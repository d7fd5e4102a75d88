/**
 * A child process of the SQLite run: `writer` or `reader` (see runSqlite). Started with
 * `node --import tsx scripts/stress/sqlite-worker.ts <role> <json config>`; talks to the parent over IPC.
 *
 * A writer journals each transaction synchronously to its own file: a begin line (workspace and
 * event ids) before BEGIN and an end line once its outcome is known. A SIGKILL can come at any time;
 * a begin line without an end line is the UNKNOWN in-flight transaction, resolved by the parent.
 */
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { openHarnessDb } from './real-store.ts';
import { retryingTransient } from '../../src/store/common/write-transaction.ts';
import { sqliteErrors } from '../../src/store/sqlite/errors.ts';
import { between, sleep, type ReaderSpec } from './model.ts';
import { FeedReader } from './reader.ts';
import { realStore } from './real-store.ts';
import { runWriter } from './writer.ts';

export interface WriterChildConfig {
  url: string;
  name: string;
  workspaces: string[];
  journal: string;
}

export interface ReaderChildConfig {
  url: string;
  specs: ReaderSpec[];
  workspaces: string[];
  result: string;
}

export type JournalLine =
  | { t: 'b'; ws: string; ids: string[] }
  | { t: 'e'; outcome: 'committed' | 'rolledBack' | 'failed'; reason?: string }
  | { t: 's'; retries: number };

type ParentMessage = { go: true; deadline: number } | { stop: true } | { drain: true };

const [role, json] = process.argv.slice(2);
const send = (msg: unknown) => process.send!(msg);
process.on('disconnect', () => process.exit(1)); // the parent is gone

function nextMessage<T extends ParentMessage>(key: keyof T): Promise<T> {
  return new Promise((resolve) => {
    const on = (msg: ParentMessage) => {
      if (key in msg) {
        process.off('message', on);
        resolve(msg as T);
      }
    };
    process.on('message', on);
  });
}

if (role === 'writer') {
  const cfg = JSON.parse(json!) as WriterChildConfig;
  const db = openHarnessDb(cfg.url);
  const fd = openSync(cfg.journal, 'a');
  const journal = (line: JournalLine) => writeSync(fd, `${JSON.stringify(line)}\n`);
  await db.raw('select 1');
  let stopped = false;
  void nextMessage<{ stop: true }>('stop').then(() => (stopped = true));
  const go = nextMessage<{ go: true; deadline: number }>('go');
  send({ ready: true });
  const { deadline } = await go;
  const stats = await runWriter({
    name: cfg.name,
    db,
    store: realStore,
    workspaces: cfg.workspaces,
    deadline,
    stopped: () => stopped,
    // As the service writes on SQLite: the write lock taken first (a write that changes nothing), run again when busy.
    transaction: (d, work) =>
      retryingTransient(
        () =>
          d.transaction(async (trx) => {
            await trx.raw("UPDATE settings SET value = value WHERE key = ''");
            return work(trx);
          }),
        sqliteErrors.retryable,
      ),
    commitErrorIsUnknown: false,
    // Post-commit work before the outcome is journaled: a SIGKILL landing here leaves a committed
    // transaction UNKNOWN to the writer (it must resolve present).
    afterCommit: () => sleep(between(0, 10)),
    onStart: (tx) => journal({ t: 'b', ws: tx.ws, ids: tx.ids }),
    onRecord: (tx) => journal({ t: 'e', outcome: tx.outcome as 'committed' | 'rolledBack' | 'failed', reason: tx.reason }),
  });
  journal({ t: 's', retries: stats.retries });
  closeSync(fd);
  await db.destroy();
  process.exit(0);
} else if (role === 'reader') {
  const cfg = JSON.parse(json!) as ReaderChildConfig;
  const db = openHarnessDb(cfg.url);
  await db.raw('select 1');
  let draining = false;
  void nextMessage<{ drain: true }>('drain').then(() => (draining = true));
  const go = nextMessage<{ go: true; deadline: number }>('go');
  send({ ready: true });
  await go;
  const readers = cfg.specs.map((spec) => new FeedReader(spec, cfg.workspaces, realStore, db));
  await Promise.all(readers.map((reader) => reader.run(() => draining)));
  writeFileSync(cfg.result, JSON.stringify(readers.map((reader) => reader.result())));
  await db.destroy();
  process.exit(0);
} else {
  throw new Error(`unknown role ${role}`);
}
