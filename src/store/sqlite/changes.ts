import type { SqliteConnection } from './connection.ts';

/**
 * SQLite has no change channel, but whether another process (the CLI, an application publishing
 * with the library) committed to the file is one pragma away: PRAGMA data_version changes with
 * every commit of another connection and never with the asking connection's own, for a few microseconds.
 * Asked on the writing connection, so this process's commits leave it alone.
 */
export class OthersWrites {
  #writer: { conn: SqliteConnection; dataVersion: { get(): unknown }; generation: number } | undefined;
  #version: string | undefined;
  #generations = 0;

  /** The writing connection was (re)opened: versions read from it are not comparable with the last one's. */
  writerOpened(conn: SqliteConnection): void {
    this.#writer = { conn, dataVersion: conn.prepare('PRAGMA data_version').pluck(), generation: ++this.#generations };
  }

  /**
   * A value that changes whenever another connection has committed since this handle's writing
   * connection last looked; undefined when it cannot be told now: no connection yet, or a
   * transaction of this handle is open on it (its snapshot would hide what others committed since).
   */
  version(): string | undefined {
    const writer = this.#writer;
    if (!writer || !writer.conn.open || writer.conn.inTransaction) return undefined;
    // One answer per synchronous stretch of code (a poll asks several times in one): nothing that
    // stretch does can tell an answer from one a few microseconds later.
    if (this.#version === undefined) {
      this.#version = `${writer.generation}:${writer.dataVersion.get()}`;
      queueMicrotask(() => (this.#version = undefined));
    }
    return this.#version;
  }
}
