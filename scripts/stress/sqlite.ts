/**
 * SQLite run: one database file, several writer processes and reader processes (sqlite-worker.ts),
 * the real append path (publishInTransaction inside writeTransaction, which retries SQLITE_BUSY) and
 * the real read operation. Faults: a random writer process is SIGKILLed now and then (and replaced);
 * its in-flight transaction is UNKNOWN and resolved against the database afterwards.
 * No negative control here: SQLite admits one writer at a time and a rowid is taken under that write
 * lock, so even the naive scheme commits in id order on SQLite.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openHarnessDb } from './real-store.ts';
import { openStore } from '../../src/store/open-store.ts';
import { check } from './check.ts';
import { between, pick, readerSpecs, sleep, type ReaderResult, type TxRecord } from './model.ts';
import { realStore } from './real-store.ts';
import { finish, type RunResult } from './result.ts';
import type { JournalLine, ReaderChildConfig, WriterChildConfig } from './sqlite-worker.ts';
import type { WriterStats } from './writer.ts';

const WORKER = fileURLToPath(new URL('./sqlite-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface SqliteRunConfig {
  label: string;
  seconds: number;
  writerProcesses: number;
  readerProcesses?: number;
  workspaces: number;
  fullReaders: number;
  restrictedReaders: number;
  kills: boolean;
  /** Mean pause between two SIGKILLs (ms). */
  killEveryMs?: number;
}

interface Child {
  proc: ChildProcess;
  ready: Promise<void>;
  exited: Promise<number | null>;
  killed: boolean;
  isReady: boolean;
}

function spawnChild(role: 'writer' | 'reader', config: WriterChildConfig | ReaderChildConfig): Child {
  const proc = fork(WORKER, [role, JSON.stringify(config)], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    proc.once('message', () => resolve());
    void exited.then((code) => reject(new Error(`${role} process exited (${code}) before it was ready`)));
  });
  const child: Child = { proc, ready, exited, killed: false, isReady: false };
  ready.then(
    () => (child.isReady = true),
    () => undefined,
  );
  return child;
}

/** A writer's journal → its transactions; a begin line without an end line is UNKNOWN. */
function readJournal(name: string, file: string): WriterStats {
  const stats: WriterStats = { records: [], retries: 0, failures: {} };
  if (!existsSync(file)) return stats; // killed before it wrote anything
  let open: TxRecord | undefined;
  for (const text of readFileSync(file, 'utf8').split('\n')) {
    if (!text) continue;
    let line: JournalLine;
    try {
      line = JSON.parse(text) as JournalLine;
    } catch {
      continue; // torn by the kill: cannot happen with one small writeSync, tolerated anyway
    }
    if (line.t === 'b') {
      if (open) stats.records.push({ ...open, outcome: 'unknown' });
      open = { writer: name, ws: line.ws, ids: line.ids, outcome: 'unknown' };
    } else if (line.t === 'e' && open) {
      stats.records.push({ ...open, outcome: line.outcome });
      if (line.reason) stats.failures[line.reason] = (stats.failures[line.reason] ?? 0) + 1;
      open = undefined;
    } else if (line.t === 's') {
      stats.retries = line.retries;
    }
  }
  if (open) stats.records.push(open);
  return stats;
}

const debug = (started: number, msg: string) => {
  if (process.env.STRESS_DEBUG) process.stderr.write(`  [${((Date.now() - started) / 1000).toFixed(2)} s] ${msg}\n`);
};

export async function runSqlite(cfg: SqliteRunConfig): Promise<RunResult> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'event-feed-stress-'));
  const url = `sqlite:${join(dir, 'feed.sqlite')}`;
  const children: Child[] = [];
  try {
    const setupStore = openStore(url);
    const setup = setupStore.knex;
    await setupStore.migrate();
    const workspaces: string[] = [];
    for (let i = 0; i < cfg.workspaces; i++) workspaces.push((await setupStore.createWorkspace(`stress ${i}`, false, Date.now())).id);
    await setup.destroy();

    const writers: Array<{ name: string; journal: string; child: Child }> = [];
    const spawnWriter = () => {
      const name = `p${writers.length}`;
      const journal = join(dir, `${name}.jsonl`);
      const child = spawnChild('writer', { url, name, workspaces, journal });
      children.push(child);
      writers.push({ name, journal, child });
      return child;
    };
    for (let i = 0; i < cfg.writerProcesses; i++) spawnWriter();

    const specs = readerSpecs(cfg.fullReaders, cfg.restrictedReaders);
    const readerProcesses = Math.min(cfg.readerProcesses ?? 2, specs.length);
    const readers = Array.from({ length: readerProcesses }, (_, i) => {
      const result = join(dir, `reader${i}.json`);
      const child = spawnChild('reader', { url, specs: specs.filter((_, j) => j % readerProcesses === i), workspaces, result });
      children.push(child);
      return { result, child };
    });

    await Promise.all(children.map((c) => c.ready));
    debug(started, 'children ready');
    const deadline = Date.now() + cfg.seconds * 1000;
    for (const c of children) c.proc.send({ go: true, deadline });

    let kills = 0;
    if (cfg.kills) {
      const mean = cfg.killEveryMs ?? 600;
      while (true) {
        await sleep(between(mean / 2, (mean * 3) / 2));
        if (Date.now() >= deadline - 100) break;
        const live = writers.filter((w) => w.child.isReady && !w.child.killed && w.child.proc.exitCode === null);
        if (!live.length) continue;
        const victim = pick(live);
        victim.child.killed = true;
        victim.child.proc.kill('SIGKILL');
        kills++;
        if (deadline - Date.now() > 1500) {
          const replacement = spawnWriter();
          void replacement.ready.then(
            () => replacement.proc.send({ go: true, deadline }),
            () => undefined,
          );
        }
      }
    }
    debug(started, `write phase over, ${kills} kills`);
    const writerCodes = await Promise.all(writers.map((w) => w.child.exited));
    debug(started, 'writers exited');
    writers.forEach((w, i) => {
      if (!w.child.killed && writerCodes[i] !== 0) throw new Error(`writer process ${w.name} exited with ${writerCodes[i]}`);
    });
    const writerStats = writers.map((w) => readJournal(w.name, w.journal));

    for (const r of readers) r.child.proc.send({ drain: true });
    const readerCodes = await Promise.all(readers.map((r) => r.child.exited));
    debug(started, 'readers drained');
    if (readerCodes.some((code) => code !== 0)) throw new Error(`reader process exited with ${readerCodes.join(',')}`);
    const readerResults = readers.flatMap((r) => JSON.parse(readFileSync(r.result, 'utf8')) as ReaderResult[]);

    const db = openHarnessDb(url);
    try {
      const truth = await realStore.truth(db);
      const counters = await realStore.counters!(db);
      const checked = check(
        realStore,
        workspaces,
        writerStats.flatMap((w) => w.records),
        readerResults,
        truth,
        counters,
      );
      return finish(
        {
          label: cfg.label,
          backend: 'sqlite',
          store: realStore.name,
          control: false,
          writers: cfg.writerProcesses,
          workspaces: cfg.workspaces,
          readers: specs.length,
          seconds: cfg.seconds,
          kills,
          commitKills: 0,
          readerKills: 0,
          cuts: 0,
          wallMs: Date.now() - started,
        },
        checked,
        readerResults,
        writerStats,
      );
    } finally {
      await db.destroy();
    }
  } finally {
    for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
