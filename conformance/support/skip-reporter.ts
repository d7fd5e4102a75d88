import type { Reporter, TestCase, TestResult } from '@playwright/test/reporter';

/** Ends the run with the checks that did not run and why: a missing key never passes silently. */
export default class SkipReporter implements Reporter {
  readonly #skipped: string[] = [];

  onTestEnd(test: TestCase, result: TestResult) {
    if (result.status !== 'skipped') return;
    const reason = test.annotations.find((a) => a.type === 'skip')?.description ?? 'no reason given';
    this.#skipped.push(`  - ${test.titlePath().slice(2).join(' › ')}: ${reason}`);
  }

  onEnd() {
    if (this.#skipped.length === 0) {
      console.log('\nConformance: every check ran.');
      return;
    }
    console.log(`\nConformance: ${this.#skipped.length} check(s) SKIPPED, not passed:\n${this.#skipped.join('\n')}`);
  }

  printsToStdio() {
    return false;
  }
}
