import type { Logger } from '../log.ts';

const WINDOW_MS = 10_000;

/**
 * Requests refused by a rate limit are counted, not logged one by one: a flood would otherwise
 * cost a log line (a synchronous write) per refusal, which is the work the limit is there to
 * refuse. One line per window says how many there were.
 */
export class RefusalLog {
  #refused = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly log: Logger) {}

  note(): void {
    this.#refused++;
    this.#timer ??= setTimeout(() => this.flush(), WINDOW_MS).unref();
  }

  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#refused === 0) return;
    this.log.warn({ refused: this.#refused, seconds: WINDOW_MS / 1000 }, 'requests refused by rate limits');
    this.#refused = 0;
  }
}
