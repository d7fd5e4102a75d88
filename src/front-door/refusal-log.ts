import type { Logger } from '../base/log.ts';

const WINDOW_MS = 10_000;
/** Refused requests whose own request line is written, per window: who was refused, by which limit. */
const LINES_PER_WINDOW = 10;

/**
 * Requests refused by a rate limit are counted, not logged one by one: a flood would otherwise
 * cost a log line (a synchronous write) per refusal, which is the work the limit is there to
 * refuse. The first few of a window get their request line (key, workspace, which limit:
 * noteRefusal), and one line per window says how many there were in all.
 */
export class RefusalLog {
  #refused = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly log: Logger) {}

  /** Counts a refusal; true when its own request line should be written (the first LINES_PER_WINDOW of a window). */
  note(): boolean {
    this.#refused++;
    this.#timer ??= setTimeout(() => this.flush(), WINDOW_MS).unref();
    return this.#refused <= LINES_PER_WINDOW;
  }

  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#refused === 0) return;
    this.log.warn({ refused: this.#refused, seconds: WINDOW_MS / 1000 }, 'requests refused by rate limits');
    this.#refused = 0;
  }
}
