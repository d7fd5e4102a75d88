import type { Clock } from '../../src/base/clock.ts';

/** A clock tests move by hand. */
export class FakeClock implements Clock {
  #ms: number;
  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.#ms = start;
  }
  now() {
    return new Date(this.#ms);
  }
  advanceDays(days: number) {
    this.#ms += days * 24 * 3600 * 1000;
  }
}
