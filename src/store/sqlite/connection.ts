import Database from 'better-sqlite3';
import { Worker } from 'node:worker_threads';
import { packageFile } from '../../base/paths.ts';

export type SqliteConnection = Database.Database;

const PREPARED_STATEMENTS_KEPT = 256;
// Each connection's page cache, in KiB (negative: SQLite counts it in KiB). better-sqlite3 sets
// 16 MB where SQLite's own default is 2 MB; the operating system caches the file anyway, so the
// larger cache only costs the server memory.
const PAGE_CACHE_KIB = -2000;

/** Settings of every connection to the file: knex's writer and the reader below. */
export function configureSqlite(conn: SqliteConnection): void {
  // WAL: readers never block the writer; NORMAL sync survives a process crash (kill -9).
  // busy_timeout: several processes may share one file.
  conn.pragma('journal_mode = WAL');
  conn.pragma('synchronous = NORMAL');
  conn.pragma('busy_timeout = 5000');
  conn.pragma('foreign_keys = ON');
  conn.pragma(`cache_size = ${PAGE_CACHE_KIB}`);
  cachePreparedStatements(conn);
}

/**
 * knex's better-sqlite3 client prepares every statement anew (`connection.prepare(sql)` per query),
 * and compiling SQL is a good part of a small query's cost. The statements of this service are a
 * few fixed texts, so keep the most recently used prepared statements of the connection. Safe
 * because better-sqlite3 runs a statement to completion synchronously (`all`/`run`) and resets it,
 * and SQLite re-prepares a statement by itself when the schema changes.
 */
function cachePreparedStatements(conn: SqliteConnection): void {
  const prepare = conn.prepare.bind(conn);
  const kept = new Map<string, Database.Statement>();
  conn.prepare = ((sql: string) => {
    let statement = kept.get(sql);
    if (statement !== undefined) {
      kept.delete(sql); // most recently used goes last
    } else {
      statement = prepare(sql);
      if (kept.size >= PREPARED_STATEMENTS_KEPT) kept.delete(kept.keys().next().value!);
    }
    kept.set(sql, statement);
    return statement;
  }) as typeof conn.prepare;
}

/**
 * A second connection to the file, for reads outside transactions: the hot reads (keys, pages,
 * retention watermarks). knex has one connection to SQLite and a write transaction holds it until
 * it commits, so a read through knex waits behind every write. In WAL mode this connection reads
 * the last committed state without waiting for the writer; better-sqlite3 runs each statement to
 * completion synchronously, so it needs no pool. It is opened on first use and closed with the
 * knex instance.
 */
export class SqliteReader {
  #conn: SqliteConnection | undefined;

  constructor(private readonly filename: string) {}

  rows<T>(sql: string, bindings: readonly unknown[]): T[] {
    // better-sqlite3 binds numbers, strings, bigints, buffers and null; SQLite has no booleans.
    return this.connection()
      .prepare(sql)
      .all(bindings.map((b) => (typeof b === 'boolean' ? Number(b) : b))) as T[];
  }

  /** The read-only connection itself, for reads of several statements (readSqlitePage). */
  connection(): SqliteConnection {
    if (!this.#conn) {
      const conn = new Database(this.filename);
      configureSqlite(conn);
      conn.pragma('query_only = ON');
      this.#conn = conn;
    }
    return this.#conn;
  }

  close(): void {
    this.#conn?.close();
    this.#conn = undefined;
  }
}

/** How often the WAL is checkpointed (off the main thread); the WAL holds at most this much of writes. */
export const CHECKPOINT_INTERVAL_MS = 500;
/** WAL frames (pages) past which the writing connection finishes a checkpoint itself, so the WAL restarts. */
export const WAL_RESTART_FRAMES = 2000;

export interface CheckpointHooks {
  /** The worker failed: the writing connection must checkpoint by itself again. */
  onFailure(reason: string): void;
  /** Runs `work` while no write transaction can start (the writing connection is held). */
  holdWriter<T>(work: () => Promise<T>): Promise<T>;
}

interface CheckpointAnswer {
  ok: boolean;
  error?: string;
  /** WAL frames after the checkpoint. */
  log?: number;
}

/**
 * Moves WAL checkpoints off the event loop. SQLite checkpoints in the connection that commits once
 * the WAL passes 1000 pages: the commit then copies the WAL into the database file and syncs it,
 * blocking every request for milliseconds (40 ms seen under load). The service's connections have
 * automatic checkpoints off, and a worker thread with its own connection checkpoints every
 * CHECKPOINT_INTERVAL_MS (PASSIVE: it never blocks readers or writers).
 *
 * The WAL file only starts over when a writer finds it fully checkpointed; under a steady write
 * load the worker never quite catches up (writes land while it copies), and the WAL grew without
 * bound (480 MB in a minute, each read searching more of its index). So once the WAL holds
 * WAL_RESTART_FRAMES or more, the worker checkpoints once more while the writing connection is
 * held: nothing lands meanwhile, the copy completes, and the next write restarts the WAL. Emits
 * wait those milliseconds; reads and the event loop do not (the writing connection used to copy
 * the rest itself: 12 ms of blocked event loop on average, every ~0.7 s at 500 events/s).
 * If the worker fails, the writing connection gets its automatic checkpoints back.
 */
export class WalCheckpointer {
  #worker: Worker | undefined;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;
  #answer: ((answer: CheckpointAnswer) => void) | undefined;

  constructor(
    private readonly filename: string,
    private readonly hooks: CheckpointHooks,
  ) {}

  start(): void {
    const worker = new Worker(packageFile('src/store/sqlite/checkpoint-worker.cjs'), {
      workerData: { filename: this.filename },
      // It holds one statement's worth of data: keep its heap small.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
    });
    worker.unref();
    worker.on('message', (answer: CheckpointAnswer) => this.#settle(answer));
    worker.on('error', (err) => this.#fail(err.message));
    worker.on('exit', (code) => this.#worker && this.#fail(`checkpoint worker exited (${code})`));
    this.#worker = worker;
    this.#timer = setInterval(() => {
      if (this.#busy) return;
      this.#busy = true;
      void this.#round().finally(() => (this.#busy = false));
    }, CHECKPOINT_INTERVAL_MS);
    this.#timer.unref();
  }

  async #round(): Promise<void> {
    const answer = await this.#checkpoint();
    if (!answer.ok) return this.#fail(`checkpoint failed: ${answer.error}`);
    if ((answer.log ?? 0) < WAL_RESTART_FRAMES) return;
    // Right after the first copy, so only what was written meanwhile is left; a failed attempt
    // (the writer could not be held) is simply made again after the next round.
    const last = await this.hooks.holdWriter(() => this.#checkpoint()).catch(() => undefined);
    if (last && !last.ok) this.#fail(`checkpoint failed: ${last.error}`);
  }

  /** One PASSIVE checkpoint in the worker. */
  #checkpoint(): Promise<CheckpointAnswer> {
    const worker = this.#worker;
    if (!worker) return Promise.resolve({ ok: true });
    return new Promise((resolve) => {
      this.#answer = resolve;
      worker.postMessage(0);
    });
  }

  #settle(answer: CheckpointAnswer): void {
    const resolve = this.#answer;
    this.#answer = undefined;
    resolve?.(answer);
  }

  #fail(reason: string): void {
    if (!this.#worker) return;
    this.stop();
    this.hooks.onFailure(reason);
  }

  stop(): void {
    clearInterval(this.#timer);
    const worker = this.#worker;
    this.#worker = undefined;
    this.#settle({ ok: true }); // a round waiting for the worker ends
    void worker?.terminate();
  }
}
