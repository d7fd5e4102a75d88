import { randomBytes } from 'node:crypto';
import type { EventEnvelope } from '../client.js';
import { sampleEvents } from '../generated/webhook-samples.js';
import { acknowledged, deliveryHeaders, newSigningSecret, postDelivery, signature } from './delivery.js';

/**
 * What `check-receiver` asks of a receiver: the rules Standard Webhooks sets for one, each graded
 * on deliveries sent to it, marked as tests (TEST_HEADER on each; ids `evt_<time>TEST…`, message
 * refs `msg_test_…`). Event types and their data are the contract's examples (generated).
 */

/** The header that marks every delivery of the check, so that a receiver's logs can tell them apart. */
export const TEST_HEADER = 'event-feed-test';

/** A timestamp this far from the clock must be refused (Standard Webhooks libraries allow 5 minutes). */
const SKEW_SECONDS = 10 * 60;
/**
 * The large body: no event is much larger, since emit_event refuses a body over 64 KiB (the
 * contract's PayloadTooLarge); the envelope adds its own fields to that.
 */
export const LARGE_BODY_BYTES = 64 * 1024 + 128;
/** An event type the receiver cannot know: the contract has no such type (yet). */
const UNKNOWN_TYPE_BASE = 'mail.opened';

export type Expected = 'acknowledged' | 'refused';

export interface Outcome {
  /** What was sent, for a person: `mail.bounced`, `signed with another secret`… */
  label: string;
  webhook_id: string;
  type: string;
  body_bytes: number;
  expected: Expected;
  status: number | null;
  error: string | null;
  latency_ms: number;
  met: boolean;
}

export type Verdict = 'pass' | 'fail' | 'skip';

export interface RuleResult {
  id: string;
  title: string;
  verdict: Verdict;
  /** Why it failed or was skipped; empty on a pass. */
  detail: string;
  /** How to fix it (on a failure). */
  hint: string;
  deliveries: Outcome[];
}

interface Probe {
  label: string;
  expected: Expected;
  event: EventEnvelope;
  /** Changes what is sent after the valid headers and body are made (a forged signature, a missing header…). */
  alter?: (request: { headers: Record<string, string>; body: string; timestamp: number }) => void;
  /** Seconds added to the clock for webhook-timestamp (a stale or future delivery). */
  skewSeconds?: number;
}

export interface CheckOptions {
  url: string;
  secret: string;
  timeoutMs: number;
  /** Called after each delivery (the human report's progress). */
  onDelivery?: (outcome: Outcome) => void;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** An event id of the contract's form (`evt_` + a ULID: its time, then 16 characters), whose random part starts with TEST. */
export function testEventId(now = Date.now()): string {
  let time = '';
  for (let t = now, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  const random = [...randomBytes(12)].map((b) => CROCKFORD[b % 32]).join('');
  return `evt_${time}TEST${random}`;
}

/** A sample event of the contract, as a new test event: its own id, the time now, a message ref that says test. */
function testEvent(sample: EventEnvelope, overrides: Partial<EventEnvelope> = {}): EventEnvelope {
  const id = testEventId();
  const refs = { ...sample.subject.refs, message_id: `msg_test_${id.slice(-12)}` };
  return { ...sample, id, occurred_at: new Date().toISOString(), subject: { ...sample.subject, refs }, ...overrides } as EventEnvelope;
}

/** A sample made at least `bytes` long by repeating the items of the longest list in the contract's examples. */
function largeEvent(bytes: number): EventEnvelope {
  let best: { sample: EventEnvelope; field: string; items: unknown[] } | undefined;
  for (const sample of sampleEvents) {
    for (const [field, value] of Object.entries(sample.data as Record<string, unknown>)) {
      if (Array.isArray(value) && value.length > 0 && JSON.stringify(value).length > (best ? JSON.stringify(best.items).length : 0))
        best = { sample, field, items: value };
    }
  }
  if (!best) throw new Error("the contract's examples have no list in any event's data to make a large event of");
  const event = testEvent(best.sample);
  const items = [...best.items];
  const grown = () => ({ ...event, data: { ...(event.data as Record<string, unknown>), [best!.field]: items } }) as EventEnvelope;
  const unit = Buffer.byteLength(JSON.stringify(best.items[0])) + 1;
  const missing = Math.max(0, Math.ceil((bytes - Buffer.byteLength(JSON.stringify(grown()))) / unit));
  for (let i = 0; i < missing; i++) items.push(best.items[i % best.items.length]);
  return grown();
}

function unknownType(): string {
  const known = new Set(sampleEvents.map((event) => event.type as string));
  let type = UNKNOWN_TYPE_BASE;
  for (let n = 2; known.has(type); n++) type = `${UNKNOWN_TYPE_BASE}${n}`;
  return type;
}

interface Rule {
  id: string;
  title: (options: CheckOptions) => string;
  hint: string;
  probes: () => Probe[];
}

const first = () => sampleEvents[0]!;

const RULES: Rule[] = [
  {
    id: 'valid-deliveries',
    title: ({ timeoutMs }) => `a valid delivery of each event type is acknowledged (2xx) within ${timeoutMs / 1000} s`,
    hint:
      'Verify the raw body as received (a re-serialised object does not match its signature), then answer 2xx at once, ' +
      'within the timeout: do the slow work after answering (a queue). A delivery that fails is sent again for three days.',
    probes: () => sampleEvents.map((sample) => ({ label: sample.type, expected: 'acknowledged', event: testEvent(sample) })),
  },
  {
    id: 'signature-verified',
    title: () => 'a delivery that does not verify is refused (not 2xx): a wrong signature, a changed body, a missing header',
    hint:
      'Verify every delivery before using it: the HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the ' +
      'base64-decoded part of the secret after `whsec_`, compared in constant time with each `v1,` signature of webhook-signature; ' +
      'answer 400 or 401 when a header is missing or no signature matches. verifyWebhook (@event-feed/client) or any Standard Webhooks library does it.',
    probes: () => [
      {
        label: 'signed with another secret',
        expected: 'refused',
        event: testEvent(first()),
        alter: (r) => void (r.headers['webhook-signature'] = signature(newSigningSecret(), r.headers['webhook-id']!, r.timestamp, r.body)),
      },
      {
        label: 'body changed after it was signed',
        expected: 'refused',
        event: testEvent(first()),
        alter: (r) =>
          void (r.body = JSON.stringify({
            ...(JSON.parse(r.body) as object),
            occurred_at: new Date(Date.now() - 3_600_000).toISOString(),
          })),
      },
      {
        label: 'no webhook-signature header',
        expected: 'refused',
        event: testEvent(first()),
        alter: (r) => void delete r.headers['webhook-signature'],
      },
      { label: 'no webhook-id header', expected: 'refused', event: testEvent(first()), alter: (r) => void delete r.headers['webhook-id'] },
      {
        label: 'no webhook-timestamp header',
        expected: 'refused',
        event: testEvent(first()),
        alter: (r) => void delete r.headers['webhook-timestamp'],
      },
    ],
  },
  {
    id: 'timestamp-tolerance',
    title: () => `a correctly signed delivery whose webhook-timestamp is ${SKEW_SECONDS / 60} minutes old, or ahead, is refused (not 2xx)`,
    hint:
      'Refuse a webhook-timestamp more than 5 minutes away from your clock, either way: a delivery captured on its way cannot then be replayed. ' +
      'Standard Webhooks libraries (and verifyWebhook) check it as part of verifying; keep your clock in time (NTP).',
    probes: () => [
      { label: `timestamp ${SKEW_SECONDS / 60} minutes old`, expected: 'refused', event: testEvent(first()), skewSeconds: -SKEW_SECONDS },
      { label: `timestamp ${SKEW_SECONDS / 60} minutes ahead`, expected: 'refused', event: testEvent(first()), skewSeconds: SKEW_SECONDS },
    ],
  },
  {
    id: 'duplicates-acknowledged',
    title: () => 'the same webhook-id twice is acknowledged (2xx) both times',
    hint:
      'Deliveries are at least once: the same event (same webhook-id) comes again after an answer was lost, or when it is redelivered. ' +
      'Answer 2xx again without acting twice: remember the ids you processed, and skip a repeat.',
    probes: () => {
      const event = testEvent(first());
      // The second copy is a retry: the same id and body, signed again at its own time.
      return [
        { label: 'first copy', expected: 'acknowledged', event },
        { label: 'second copy (same webhook-id)', expected: 'acknowledged', event },
      ];
    },
  },
  {
    id: 'unknown-type-accepted',
    title: () => `an event type the receiver has never seen (${unknownType()}) is acknowledged (2xx)`,
    hint:
      'New event types are added to the contract: acknowledge (2xx) a type you do not handle, and ignore it. ' +
      'A refusal is retried for days and can end with the endpoint disabled, and events of the types you do handle delayed.',
    probes: () => [
      {
        label: unknownType(),
        expected: 'acknowledged',
        event: testEvent(first(), { type: unknownType(), data: {} } as unknown as Partial<EventEnvelope>),
      },
    ],
  },
  {
    id: 'rotation-signatures',
    title: () => 'a webhook-signature with two signatures, only the second matching (a secret rotation), is acknowledged (2xx)',
    hint:
      'During a secret rotation webhook-signature carries several space-separated signatures (`v1,<new> v1,<old>`): ' +
      'accept the delivery when any one of them matches, not only the first.',
    probes: () => [
      {
        label: 'v1,<another secret> v1,<your secret>',
        expected: 'acknowledged',
        event: testEvent(first()),
        alter: (r) =>
          void (r.headers['webhook-signature'] =
            `${signature(newSigningSecret(), r.headers['webhook-id']!, r.timestamp, r.body)} ${r.headers['webhook-signature']}`),
      },
    ],
  },
  {
    id: 'large-body',
    title: () => `a large valid delivery (${Math.round(LARGE_BODY_BYTES / 1024)} KiB) is acknowledged (2xx)`,
    hint: `An event can be about 64 KiB (emit_event takes bodies up to 64 KiB): let your receiver read bodies of at least ${Math.round(LARGE_BODY_BYTES / 1024) + 1} KiB (e.g. express.raw({ type: 'application/json', limit: '1mb' })).`,
    probes: () => {
      const event = largeEvent(LARGE_BODY_BYTES);
      return [{ label: `${event.type}, ${Buffer.byteLength(JSON.stringify(event))} bytes`, expected: 'acknowledged', event }];
    },
  },
];

export const RULE_IDS = RULES.map((rule) => rule.id);

async function send(probe: Probe, options: CheckOptions): Promise<Outcome> {
  const timestamp = Math.floor(Date.now() / 1000) + (probe.skewSeconds ?? 0);
  const body = JSON.stringify(probe.event);
  const request = {
    headers: { ...deliveryHeaders([options.secret], probe.event.id, timestamp, body), [TEST_HEADER]: 'true' },
    body,
    timestamp,
  };
  probe.alter?.(request);
  const result = await postDelivery(options.url, request.headers, request.body, options.timeoutMs);
  // Refused means an answer that is not 2xx: no answer at all (a timeout, a refused connection) is no verdict on the delivery.
  const met = probe.expected === 'acknowledged' ? acknowledged(result) : result.status !== null && !acknowledged(result);
  return {
    label: probe.label,
    webhook_id: probe.event.id,
    type: probe.event.type,
    body_bytes: Buffer.byteLength(request.body),
    expected: probe.expected,
    status: result.status,
    error: result.error,
    latency_ms: result.latencyMs,
    met,
  };
}

const answer = (o: Outcome) => (o.status === null ? `no answer (${o.error})` : `answered ${o.status}`);
const missed = (outcomes: Outcome[]) =>
  outcomes
    .filter((o) => !o.met)
    .map((o) => `${o.label}: ${answer(o)}, expected ${o.expected === 'acknowledged' ? '2xx' : 'a refusal (4xx)'}`)
    .join('; ');

/**
 * Sends the battery, one delivery at a time (a receiver may handle one at a time, and the
 * duplicate's two copies must come in order), and grades each rule. A rule that means nothing
 * given another's failure is skipped, with that reason, rather than failed twice for one fault:
 * every rule when no valid delivery is acknowledged at all (a receiver that refuses everything
 * refuses forgeries too); the timestamp rule when signatures are not verified (the timestamp is
 * checked as part of verifying).
 */
export async function checkReceiver(options: CheckOptions): Promise<RuleResult[]> {
  const results: RuleResult[] = [];
  for (const rule of RULES) {
    const title = rule.title(options);
    const valid = results.find((r) => r.id === 'valid-deliveries');
    if (valid && valid.deliveries.every((o) => !o.met)) {
      results.push({
        id: rule.id,
        title,
        verdict: 'skip',
        detail: 'not checked: the receiver acknowledged no valid delivery (see valid-deliveries)',
        hint: '',
        deliveries: [],
      });
      continue;
    }
    const deliveries: Outcome[] = [];
    for (const probe of rule.probes()) {
      const outcome = await send(probe, options);
      deliveries.push(outcome);
      options.onDelivery?.(outcome);
    }
    const passed = deliveries.every((o) => o.met);
    const signatures = results.find((r) => r.id === 'signature-verified');
    if (!passed && rule.id === 'timestamp-tolerance' && signatures?.verdict === 'fail') {
      results.push({
        id: rule.id,
        title,
        verdict: 'skip',
        detail: `not graded: the receiver does not verify signatures (see signature-verified); ${missed(deliveries)}`,
        hint: '',
        deliveries,
      });
      continue;
    }
    results.push({
      id: rule.id,
      title,
      verdict: passed ? 'pass' : 'fail',
      detail: passed ? '' : missed(deliveries),
      hint: passed ? '' : rule.hint,
      deliveries,
    });
  }
  return results;
}
