import { checkReceiver, TEST_HEADER, type Outcome, type RuleResult, type Verdict } from './receiver-rules.js';
import type { Paint } from './terminal.js';

export interface CheckReceiverOptions {
  url: string;
  secret: string;
  timeoutMs: number;
  json: boolean;
}

/** The machine-readable report (`--json`): one object, on stdout. */
export interface CheckReport {
  url: string;
  started_at: string;
  finished_at: string;
  timeout_ms: number;
  /** True only when every rule passed (the exit status is then 0). */
  passed: boolean;
  counts: Record<Verdict, number>;
  /** How the deliveries are marked as tests. */
  test_marker: { header: string; event_id_part: string; message_ref_prefix: string };
  rules: RuleResult[];
}

const WORD: Record<Verdict, string> = { pass: 'PASS', fail: 'FAIL', skip: 'SKIP' };
const COLOUR = { pass: 'green', fail: 'red', skip: 'yellow' } as const;

/** `event-feed-client check-receiver`: the battery, then the report. Resolves with the exit code: 0 only when every rule passed. */
export async function runCheckReceiver(options: CheckReceiverOptions, out: (text: string) => void, paint: Paint): Promise<number> {
  const startedAt = new Date();
  if (!options.json) {
    out(`Checking the webhook receiver at ${options.url}, started ${startedAt.toISOString()}`);
    out(`Its deliveries are marked as tests: header ${TEST_HEADER}: true, event ids evt_<time>TEST…, message refs msg_test_…`);
  }
  const progress = (o: Outcome) =>
    out(paint('dim', `  sent ${o.label} (${o.webhook_id}, ${o.body_bytes} bytes): ${o.status ?? o.error}, ${o.latency_ms} ms`));
  const rules = await checkReceiver({
    url: options.url,
    secret: options.secret,
    timeoutMs: options.timeoutMs,
    ...(options.json ? {} : { onDelivery: progress }),
  });
  const counts: Record<Verdict, number> = { pass: 0, fail: 0, skip: 0 };
  for (const rule of rules) counts[rule.verdict]++;
  const passed = counts.pass === rules.length;
  if (options.json) {
    const report: CheckReport = {
      url: options.url,
      started_at: startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      timeout_ms: options.timeoutMs,
      passed,
      counts,
      test_marker: { header: `${TEST_HEADER}: true`, event_id_part: 'TEST', message_ref_prefix: 'msg_test_' },
      rules,
    };
    out(JSON.stringify(report, null, 2));
  } else {
    out('');
    out('Receiver report');
    out(`  receiver: ${options.url}`);
    out(`  run:      ${startedAt.toISOString()} to ${new Date().toISOString()}`);
    out('');
    for (const rule of rules) {
      out(`  ${paint(COLOUR[rule.verdict], WORD[rule.verdict])}  ${rule.id}: ${rule.title}`);
      if (rule.detail) out(`        ${rule.detail}`);
      if (rule.hint) out(`        fix: ${rule.hint}`);
    }
    out('');
    if (passed) out(paint('green', `Receiver check: every rule passed (${counts.pass}).`));
    else
      out(
        paint(
          'red',
          `Receiver check: FAILED: ${counts.fail} rule(s) failed, ${counts.pass} passed, ${counts.skip} skipped (not graded, not passed).`,
        ),
      );
  }
  return passed ? 0 : 1;
}
