import { randomBytes } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { UsageError } from './config.js';

/** The state file `listen` keeps in the working folder unless told otherwise (`--state`). */
export const DEFAULT_STATE_FILE = '.event-feed-listen.json';

/** What names one setup: the same file may hold several, which never mix. */
export interface SetupKey {
  feedUrl: string;
  /** The key's id, never the key. */
  keyId: string;
  forwardTo: string;
}

/**
 * Where a setup stands: the feed's cursor, and the events acknowledged since that cursor (the
 * feed gives a cursor per page, not per event; on resume, the page is read again from `cursor`
 * and these are skipped). Both are saved after every acknowledged delivery.
 */
export interface Position {
  /** `null`: from the oldest retained event. */
  cursor: string | null;
  delivered: string[];
}

export interface Setup extends Position {
  feed_url: string;
  key_id: string;
  forward_to: string;
  last_delivered: string | null;
  /** A signing secret `listen` made (none when `--secret` gives it), so that a restart signs with the same one. */
  secret?: string;
  updated_at: string;
}

interface StateFile {
  version: 1;
  setups: Record<string, Setup>;
}

const nameOf = (key: SetupKey) => `${key.feedUrl} ${key.keyId} -> ${key.forwardTo}`;

/**
 * The state file: one JSON object holding each setup's position, replaced whole on every save by
 * writing a temporary file beside it and renaming it over (a crash leaves the old file or the new
 * one, never half of one), readable by its owner only (it may hold a signing secret).
 */
export class ListenState {
  readonly #name: string;

  constructor(
    readonly file: string,
    readonly key: SetupKey,
  ) {
    this.#name = nameOf(key);
  }

  async #read(): Promise<StateFile> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, setups: {} };
      throw new UsageError(`cannot read the state file ${this.file}: ${(error as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const state = parsed as Partial<StateFile> | undefined;
    if (!state || state.version !== 1 || typeof state.setups !== 'object' || state.setups === null) {
      throw new UsageError(`${this.file} is not a state file of event-feed-client listen: remove it, or pass --state with another file`);
    }
    return state as StateFile;
  }

  /** This setup's saved state, if any. */
  async load(): Promise<Setup | undefined> {
    const setup = (await this.#read()).setups[this.#name];
    if (setup === undefined) return undefined;
    if (
      (setup.cursor !== null && typeof setup.cursor !== 'string') ||
      !Array.isArray(setup.delivered) ||
      !setup.delivered.every((id) => typeof id === 'string')
    ) {
      throw new UsageError(
        `${this.file}: the saved state of this setup is damaged: remove the file, or start with --from now|start|CURSOR`,
      );
    }
    return setup;
  }

  /** Saves this setup's state (the others in the file are kept as they are), atomically. */
  async save(setup: Omit<Setup, 'feed_url' | 'key_id' | 'forward_to' | 'updated_at'>): Promise<void> {
    const state = await this.#read();
    state.setups[this.#name] = {
      feed_url: this.key.feedUrl,
      key_id: this.key.keyId,
      forward_to: this.key.forwardTo,
      ...setup,
      updated_at: new Date().toISOString(),
    };
    const temporary = join(dirname(this.file), `.${basename(this.file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    try {
      const handle = await open(temporary, 'w', 0o600);
      try {
        await handle.writeFile(`${JSON.stringify(state, null, 2)}\n`);
        // On disk before the rename makes it the state: a power cut cannot leave an empty file.
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, this.file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw new UsageError(`cannot write the state file ${this.file}: ${(error as Error).message}`);
    }
  }
}
