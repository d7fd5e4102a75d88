import type { Erasure } from '../../generated/types.ts';
import { permit, PERMISSIONS } from '../auth/principal.ts';
import type { AppServices } from '../app/services.ts';
import { RequestValidator } from '../contract/request-validator.ts';
import { runOperation } from '../operations/registry.ts';

/**
 * `event-feed erase`: the erase_person operation run for the operator (the whole workspace, as
 * `key create`'s operator), through runOperation like any edge, with the API's validation; then
 * runs the erasure here to its end (ErasureRunner), or waits for the instance that holds its
 * lease, and answers the log's entry (never the addresses).
 */
export async function eraseAsOperator(services: AppServices, workspaceId: string, emails: string[]): Promise<Erasure> {
  const ctx = {
    ...services,
    principal: permit({ keyId: 'operator', workspaceId, permissions: new Set(PERMISSIONS), mailboxes: null }, 'admin'),
  };
  const request = new RequestValidator().check('erase_person', { emails });
  const started = (await runOperation('erase_person', ctx, request)).result;
  for (;;) {
    await services.erasures.runner.idle();
    const now = (await runOperation('erasure_status', ctx, { id: started.erasure.id })).result;
    if (now.erasure.status === 'completed') return now.erasure;
    await new Promise((resolve) => setTimeout(resolve, 500));
    services.erasures.runner.kick();
  }
}
