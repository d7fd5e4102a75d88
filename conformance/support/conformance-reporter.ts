import type { FullConfig, FullResult, Reporter, Suite, TestCase, TestResult } from '@playwright/test/reporter';
import { readLedger, type KeyLedger } from './made-keys.ts';
import { maxWaitSeconds, totalWaitedMs } from './rate-limits.ts';
import { writesAllowed } from './writes.ts';

type Verdict = 'PASS' | 'FAIL' | 'SKIP';

const ANSI = /\u001b\[[0-9;]*m/g;
const lines = (text: string) =>
  text
    .replace(ANSI, '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
const firstLine = (text: string) => lines(text)[0] ?? '';
/** A failure in one line: its message's first line, with what was expected and received. */
const failureSummary = (text: string) => {
  const all = lines(text);
  const detail = all
    .slice(1)
    .filter((l) => /^(Expected|Received)\b/.test(l))
    .slice(0, 2);
  return [all[0] ?? 'failed', ...detail].join('; ').slice(0, 400);
};

/** A check's name as the report and the README give it: « rule › check ». */
export function checkTitle(test: TestCase): string {
  const titles = [test.title];
  for (let suite: Suite | undefined = test.parent; suite && suite.type === 'describe'; suite = suite.parent) titles.unshift(suite.title);
  return titles.join(' › ');
}

/**
 * The run's report: which deployment (URL, the service's version from GET /version, the time),
 * every check with pass/fail/skip and why, the time spent waiting out rate limits, and a closing
 * line that says « every check ran and passed » only when that is true.
 */
export default class ConformanceReporter implements Reporter {
  readonly #verdicts: Array<{ verdict: Verdict; title: string; why: string }> = [];
  readonly #startedAt = new Date();
  #baseUrl = process.env.EVENT_FEED_BASE_URL ?? '';

  onBegin(config: FullConfig) {
    this.#baseUrl = String(config.projects[0]?.use.baseURL ?? this.#baseUrl);
    console.log(`Conformance of ${this.#baseUrl}, started ${this.#startedAt.toISOString()}`);
  }

  onTestEnd(test: TestCase, result: TestResult) {
    const title = checkTitle(test);
    if (result.status === 'passed') this.#verdicts.push({ verdict: 'PASS', title, why: '' });
    else if (result.status === 'skipped') {
      const why = [...test.annotations, ...result.annotations].reverse().find((a) => a.type === 'skip')?.description ?? 'no reason given';
      this.#verdicts.push({ verdict: 'SKIP', title, why });
    } else {
      const why = result.status === 'failed' ? failureSummary(result.error?.message ?? 'failed') : result.status;
      this.#verdicts.push({ verdict: 'FAIL', title, why });
    }
  }

  async onEnd(result: FullResult): Promise<{ status?: FullResult['status'] } | undefined> {
    const version = await deploymentVersion(this.#baseUrl);
    // Written by the global teardown, which has run by now: the keys made with EVENT_FEED_ADMIN_KEY.
    const keys = readLedger();
    const leftBehind = keys.made.filter((k) => !k.revoked);
    const readOnly = !writesAllowed();
    const count = (v: Verdict) => this.#verdicts.filter((x) => x.verdict === v).length;
    const lines = [
      '',
      'Conformance report',
      `  deployment: ${this.#baseUrl}`,
      `  service:    ${version}`,
      `  run:        ${this.#startedAt.toISOString()} to ${new Date().toISOString()}`,
      `  rate limits: waited ${(totalWaitedMs() / 1000).toFixed(1)} s in all (bound ${maxWaitSeconds()} s, EVENT_FEED_MAX_WAIT_SECONDS)`,
      ...(readOnly
        ? [
            `  writes:     read-only run: the checks that emit events (tagged @writes) were not run (EVENT_FEED_ALLOW_WRITES=1 / --allow-writes with a write key runs them)`,
          ]
        : []),
      ...madeKeysLines(keys),
      '',
      ...this.#verdicts.map(({ verdict, title, why }) => `  ${verdict}  ${title}${why ? `: ${why}` : ''}`),
      '',
    ];
    const [failed, passed, skipped] = [count('FAIL'), count('PASS'), count('SKIP')];
    if (failed > 0 || result.status !== 'passed') {
      lines.push(
        `Conformance: FAILED (${result.status}): ${failed} check(s) failed, ${passed} passed, ${skipped} skipped (not run, not passed).`,
      );
    } else if (skipped > 0) {
      lines.push(`Conformance: no failure; ${passed} check(s) passed, ${skipped} check(s) SKIPPED, not passed (reasons above).`);
    } else if (readOnly) {
      lines.push(
        `Conformance: every read-only check ran and passed (${passed}); the checks that emit events were not run (read-only run).`,
      );
    } else {
      lines.push(`Conformance: every check ran and passed (${passed}).`);
    }
    if (leftBehind.length > 0)
      lines.push(`Conformance: FAILED to revoke ${leftBehind.length} key(s) the kit made (above): revoke them with revoke_key.`);
    console.log(lines.join('\n'));
    return leftBehind.length > 0 ? { status: 'failed' } : undefined;
  }

  printsToStdio() {
    return true;
  }
}

/** What the kit made with EVENT_FEED_ADMIN_KEY, what it revoked, and what an admin key could not give it. */
function madeKeysLines(keys: KeyLedger): string[] {
  if (keys.made.length === 0 && keys.notMade.length === 0) return [];
  const revoked = keys.made.filter((k) => k.revoked).length;
  return [
    `  keys:       ${keys.made.length} made with EVENT_FEED_ADMIN_KEY through create_key, ${revoked} of them revoked when the run ended` +
      (revoked === keys.made.length ? ': none left behind' : ''),
    ...keys.made.map((k) => `    ${k.revoked ? 'revoked' : 'LEFT BEHIND'}  ${k.id}  ${k.role}${k.error ? ` (${k.error})` : ''}`),
    ...keys.notMade.map((why) => `  not checked: ${why}`),
  ];
}

/** « event-feed 0.1.0, contract 1.0.0 » from the deployment's GET /version, or why it is unknown. */
async function deploymentVersion(baseUrl: string): Promise<string> {
  try {
    const response = await fetch(new URL('/version', baseUrl), { signal: AbortSignal.timeout(5000) });
    if (!response.ok) return `version unknown (GET /version answered ${response.status})`;
    const body = (await response.json()) as { service?: unknown; version?: unknown; contract?: unknown };
    return `${String(body.service)} ${String(body.version)}, contract ${String(body.contract)}`;
  } catch (error) {
    return `version unknown (GET /version: ${firstLine(String((error as Error).message ?? error))})`;
  }
}
