import type { RedeliverWebhookRequest, RedeliverWebhookResponse } from '../../generated/types.ts';
import { invalidArgument } from '../errors.ts';
import { assertCursorNotExpired } from '../feed/expiry.ts';
import { matchesTypes } from '../feed/type-filter.ts';
import { prunedThrough } from '../store/retention.ts';
import { writeTransaction } from '../store/write-transaction.ts';
import { findEndpoint } from '../webhooks/store.ts';
import { requireWorkspaceAdmin, type OperationContext } from './context.ts';

/** redeliver_webhook: schedules the events after a cursor for delivery again to one endpoint. */
export async function redeliverWebhook(ctx: OperationContext, input: RedeliverWebhookRequest): Promise<RedeliverWebhookResponse> {
  requireWorkspaceAdmin(ctx.principal);
  const { workspaceId } = ctx.principal;
  const endpoint = await findEndpoint(ctx.db, workspaceId, input.url);
  if (!endpoint) throw invalidArgument('no webhook endpoint has this url in this workspace');
  const afterSeq = input.after === undefined ? await prunedThrough(ctx.db, workspaceId) : ctx.cursors.decode(workspaceId, input.after);
  const now = ctx.clock.now().getTime();
  const types = JSON.parse(endpoint.event_types) as string[];

  const events: Array<{ seq: number; id: string; type: string }> = await ctx.db('events')
    .select('seq', 'id', 'type')
    .where('workspace_id', workspaceId)
    .andWhere('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(input.limit ?? 1000);
  if (input.after !== undefined) await assertCursorNotExpired(ctx.db, workspaceId, null, afterSeq);
  const chosen = events.filter((event) => matchesTypes(types, event.type));
  await writeTransaction(ctx.db, async (trx) => {
    for (let i = 0; i < chosen.length; i += 500) {
      await trx('webhook_deliveries').insert(
        chosen.slice(i, i + 500).map((event) => ({ endpoint_id: endpoint.id, workspace_id: workspaceId, event_seq: Number(event.seq), event_id: event.id, attempts: 0, next_attempt_at: now, created_at: now })),
      );
    }
  });
  const last = events.at(-1);
  return {
    scheduled: chosen.length,
    next_cursor: last ? ctx.cursors.encode(workspaceId, Number(last.seq)) : (input.after ?? ctx.cursors.encode(workspaceId, afterSeq)),
  };
}
