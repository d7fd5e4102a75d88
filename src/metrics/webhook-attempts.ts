import type { WebhookStore } from '../store/port.ts';
import type { Metrics } from './metrics.ts';

/**
 * The store the webhook dispatcher records its attempts through, counting each recorded attempt by
 * outcome (Metrics.webhookAttempt): every outcome the dispatcher reaches goes through
 * recordAttempt, so this counts them all without a line in the dispatcher.
 */
export function countingAttempts<S extends WebhookStore>(store: S, metrics: Metrics): S {
  return {
    ...store,
    webhooks: {
      ...store.webhooks,
      recordAttempt: async (record) => {
        const recorded = await store.webhooks.recordAttempt(record);
        metrics.webhookAttempt(record.outcome);
        return recorded;
      },
    },
  };
}
