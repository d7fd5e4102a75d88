import type { OperationInput } from '../../generated/operations.ts';
import type { ErasePersonResponse } from '../../generated/types.ts';
import { normalAddress } from '../erasure/addresses.ts';
import { erasureView } from '../erasure/erasure-view.ts';
import { ERASED } from '../erasure/redact.ts';
import { forbidden, invalidArgument } from '../base/errors.ts';
import { newErasureId } from '../base/ids.ts';
import { requireWholeWorkspace } from '../auth/principal.ts';
import type { OperationContext } from './context.ts';

// What the contract's `format: email` lets through and an address still must be: one @, a dot-free-or-not domain, no spaces.
const ADDRESS = /^[^\s@]+@[^\s@]+$/;

/**
 * erase_person: records an erasure of the addresses from every event of the workspace stored so
 * far, and has the ErasureRunner run it in the background; answers at once. Idempotent: the same
 * addresses find the erasure already running, or the completed one when nothing was stored since.
 * Otherwise a new erasure covers what the last one of the same addresses did not (or everything).
 */
export async function erasePerson(ctx: OperationContext<'admin'>, input: OperationInput<'erase_person'>): Promise<ErasePersonResponse> {
  requireWholeWorkspace(ctx.principal, 'erase a person: erasure covers every mailbox of the workspace');
  const { workspaceId, keyId } = ctx.principal;
  if (input.workspace !== undefined && input.workspace !== workspaceId) throw forbidden('this key may only erase from its own workspace');
  const addresses = [...new Set(input.emails.map(normalAddress))].sort();
  for (const [index, address] of addresses.entries()) {
    if (!ADDRESS.test(address)) throw invalidArgument(`emails/${index} is not an email address`);
    if (address === ERASED.email) throw invalidArgument(`emails/${index} is the address erased values take`);
  }
  const hashes = addresses.map((address) => ctx.erasures.keys.hash(address)).sort();
  const requestKey = hashes.join(',');
  const head = await ctx.store.feedHead(workspaceId);
  const prunedThrough = await ctx.store.prunedThrough(workspaceId);
  const now = ctx.clock.now().getTime();
  const { erasure, created } = await ctx.store.erasures.begin(workspaceId, requestKey, (last) => {
    // Running, or completed with nothing stored since: that one answers.
    if (last && (last.status !== 'completed' || last.throughSeq >= head)) return undefined;
    const from = last ? last.throughSeq : prunedThrough;
    return {
      id: newErasureId(),
      workspaceId,
      status: 'pending',
      addressHashes: hashes,
      requestKey,
      sealedAddresses: ctx.erasures.keys.seal(addresses),
      requestedBy: keyId,
      requestedAt: now,
      completedAt: null,
      fromSeq: from,
      throughSeq: Math.max(from, head),
      cursorSeq: from,
      eventsErased: 0,
    };
  });
  if (erasure.status !== 'completed') ctx.erasures.runner.kick();
  return { erasure: erasureView(erasure), outcome: created ? 'started' : 'existing' };
}
