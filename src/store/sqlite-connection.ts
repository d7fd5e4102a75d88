import Database from 'better-sqlite3';
import { Worker } from 'node:worker_threads';
import { packageFile } from '../paths.ts';

export type SqliteConnection = Database.Database;

const PREPARED_STATEMENTS_KEPT = 256;

/** Settings of every connection to the file: knex's writer and the reader below. */
export function configureSqlite(conn: SqliteConnection): void {
  // WAL: readers never block the writer; NORMAL sync survives a process crash (kill -9).
  // busy_timeout: several processes may share one file.
  conn.pragma('journal_mode = WAL');
  conn.pragma('synchronous = NORMAL');
  conn.pragma('busy_timeout = 5000');
  conn.pragma('foreign_keys = ON');
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
    if (!this.#conn) {
      const conn = new Database(this.filename);
      configureSqlite(conn);
      conn.pragma('query_only = ON');
      this.#conn = conn;
    }
    // better-sqlite3 binds numbers, strings, bigints, buffers and null; SQLite has no booleans.
    return this.#conn.prepare(sql).all(bindings.map((b) => (typeof b === 'boolean' ? Number(b) : b))) as T[];
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
  /** A PASSIVE checkpoint on the writing connection, between its transactions. */
  finishOnWriter(): Promise<unknown>;
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
 * bound (480 MB in a minute, each read searching more of its index). So once the worker has copied
 * most of a WAL of WAL_RESTART_FRAMES or more, the writing connection checkpoints the few frames
 * left, between two transactions, and its next write restarts the WAL. If the worker fails, the
 * writer connection gets its automatic checkpoints back.
 */
export class WalCheckpointer {
  #worker: Worker | undefined;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;

  constructor(
    private readonly filename: string,
    private readonly hooks: CheckpointHooks,
  ) {}

  start(): void {
    const worker = new Worker(packageFile('src/store/checkpoint-worker.cjs'), {
      workerData: { filename: this.filename },
      // It holds one statement's worth of data: keep its heap small.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
    });
    worker.unref();
    worker.on('message', (message: { ok: boolean; error?: string; log?: number }) => {
      if (!message.ok) {
        this.#busy = false;
        return this.#fail(`checkpoint failed: ${message.error}`);
      }
      if ((message.log ?? 0) < WAL_RESTART_FRAMES) return void (this.#busy = false);
      // Right after the worker's copy, so only what was written meanwhile is left to copy here.
      void this.hooks
        .finishOnWriter()
        .catch(() => {}) // a failed attempt is simply made again after the next worker run
        .finally(() => (this.#busy = false));
    });
    worker.on('error', (err) => this.#fail(err.message));
    worker.on('exit', (code) => this.#worker && this.#fail(`checkpoint worker exited (${code})`));
    this.#worker = worker;
    this.#timer = setInterval(() => {
      if (this.#busy) return;
      this.#busy = true;
      worker.postMessage(0);
    }, CHECKPOINT_INTERVAL_MS);
    this.#timer.unref();
  }

  #fail(reason: string): void {
    this.stop();
    this.hooks.onFailure(reason);
  }

  stop(): void {
    clearInterval(this.#timer);
    const worker = this.#worker;
    this.#worker = undefined;
    void worker?.terminate();
  }
}
