import type { TestWebhookResponse } from '../../generated/types.ts';
import { newTestDeliveryId } from '../base/ids.ts';
import type { EndpointRow } from '../store/port.ts';
import { signingSecrets } from './rotation.ts';
import { WebhookSender } from './send.ts';
import type { TargetPolicy } from '../net/target-policy.ts';

/** The type of a test delivery: not an event type, so it never enters the feed and no filter applies to it. */
export const TEST_EVENT_TYPE = 'webhook.test';
/** How much of the endpoint's answer test_webhook shows. */
export const TEST_ANSWER_BYTES = 1024;

/**
 * The test delivery's body: the envelope's fields (minus `subject`: it concerns no one), with an
 * id of its own kind (`whtest_…`) and a `data` saying what it is.
 */
export function testDeliveryBody(endpoint: Pick<EndpointRow, 'id' | 'workspace_id'>, id: string, now: number): string {
  return JSON.stringify({
    id,
    type: TEST_EVENT_TYPE,
    occurred_at: new Date(now).toISOString(),
    account: endpoint.workspace_id,
    data: {
      endpoint_id: endpoint.id,
      message: 'A test delivery sent by test_webhook. It is not an event of the feed and is never retried.',
    },
    v: 1,
  });
}

/**
 * Sends one signed test delivery to the endpoint now, outside the outbox (nothing is stored, nothing
 * retried), with the headers and signatures a real delivery would carry at this moment (both
 * secrets during a rotation's grace), through the same address policy and timeout. A sender of its
 * own, closed after: a test never waits behind the dispatcher's slots, and costs nothing idle.
 */
export async function sendTestDelivery(
  endpoint: EndpointRow,
  now: number,
  policy: TargetPolicy,
  timeoutMs: number,
): Promise<TestWebhookResponse> {
  const id = newTestDeliveryId();
  const secrets = signingSecrets(endpoint, now);
  const sender = new WebhookSender(policy, timeoutMs);
  try {
    const result = await sender.send(
      { url: endpoint.url, secrets, eventId: id, body: testDeliveryBody(endpoint, id, now) },
      Math.floor(now / 1000),
      { keepAnswerBytes: TEST_ANSWER_BYTES },
    );
    return {
      endpoint_id: endpoint.id,
      webhook_id: id,
      event_type: TEST_EVENT_TYPE,
      sent_at: new Date(now).toISOString(),
      signatures: secrets.length,
      delivered: result.error === null,
      status: result.status,
      error: result.error,
      latency_ms: result.latencyMs,
      response_body: result.answer?.text ?? null,
      response_body_truncated: result.answer?.truncated ?? false,
    };
  } finally {
    await sender.close();
  }
}
