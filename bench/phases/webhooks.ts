/** Webhook fairness (`webhooksPhase`), on a server of its own once the others are done. */
import { log, quick } from '../config.ts';
import { webhooksPhase as measureWebhooks } from '../webhook-fairness.ts';
import type { Phase } from './phase.ts';

export const webhooksPhase: Phase = {
  name: 'webhooks',
  server: 'own',
  compares: true,
  async run(ctx) {
    log(`[${ctx.kind}] webhooks: another workspace's delivery latency beside 16 slow endpoints and a tarpit…`);
    ctx.result.webhooks = await measureWebhooks(ctx.database.url, { quick, root: ctx.root, log });
  },
};
