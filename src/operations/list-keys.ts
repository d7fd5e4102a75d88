import type { OperationInput } from '../../generated/operations.ts';
import type { ApiKey, ListKeysResponse } from '../../generated/types.ts';
import { keyView } from '../auth/api-keys.ts';
import { invalidArgument } from '../base/errors.ts';
import type { OperationContext } from './context.ts';
import { withinCallerScope } from './key-scope.ts';

/** A caller restricted to mailboxes filters what it reads: one call reads at most this many keys. */
export const LIST_KEYS_SCAN_BUDGET = 2000;
const SCAN_BATCH = 500;
// The token is the last key id a page looked at; keys are listed in id (creation) order.
const PAGE_TOKEN = /^key_[0-9A-HJKMNP-TV-Z]{26}$/;

/** list_keys: a page of the workspace's keys the caller may manage; never a secret. */
export async function listApiKeys(ctx: OperationContext<'admin'>, input: OperationInput<'list_keys'>): Promise<ListKeysResponse> {
  const { principal } = ctx;
  const { limit, include_revoked: includeRevoked } = input;
  if (input.page_token !== undefined && !PAGE_TOKEN.test(input.page_token)) {
    throw invalidArgument('page_token is not valid: pass next_page_token as list_keys returned it');
  }
  const read = (afterId: string | undefined, count: number) =>
    ctx.store.keys.after(principal.workspaceId, { afterId, includeRevoked, limit: count }).then((rows) => rows.map(keyView));

  if (principal.mailboxes === null) {
    const rows = await read(input.page_token, limit + 1);
    const keys = rows.slice(0, limit);
    return { keys, next_page_token: rows.length > limit ? keys.at(-1)!.id : null };
  }

  const keys: ApiKey[] = [];
  let lastSeen = input.page_token;
  let scanned = 0;
  for (;;) {
    const batchSize = Math.min(SCAN_BATCH, LIST_KEYS_SCAN_BUDGET - scanned);
    const batch = await read(lastSeen, batchSize);
    for (const key of batch) {
      scanned++;
      lastSeen = key.id;
      if (withinCallerScope(principal, key)) keys.push(key);
      if (keys.length === limit) return { keys, next_page_token: key.id };
    }
    if (batch.length < batchSize) return { keys, next_page_token: null };
    if (scanned >= LIST_KEYS_SCAN_BUDGET) return { keys, next_page_token: lastSeen ?? null };
  }
}
